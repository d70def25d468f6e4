/**
 * The bazaar feature's contract: per-user item storage on item servers (the game plugin's
 * "bazaar"), and the servers themselves. Rows are as the API shows them (decisions.md §2).
 */
import { Type } from '@sinclair/typebox';
import { createServiceRef } from '../../core/registry.ts';
import { dateStr, example, flagStr, idStr, moneyStr, str, strOrNull } from '../../core/schemas.ts';

export const ItemRow = Type.Object({
  id: idStr(),
  owner: str('user ID', '7'),
  serverID: str(undefined, '1'),
  itemID: str('item identifier, e.g. DIAMOND_SWORD', 'DIAMOND_SWORD'),
  modelID: strOrNull(undefined, null),
  name: example('&bExcalibur'),
  lore: strOrNull(undefined, 'Forged in the Nether'),
  amount: example('1'),
  durability: example('1561'),
  maxDurability: example('1561'),
  enchantments: strOrNull(undefined, null),
  base64: str('the serialized item, as the game sent it', 'rO0ABXNyABpvcmcuYnVra2l0LnV0aWwuaW8uV3JhcHBlcg=='),
  description: strOrNull(undefined, null),
  price: moneyStr(),
  sold: flagStr(),
  creationDate: dateStr(),
});
export type ItemRow = typeof ItemRow.static;

export const ServerRow = Type.Object({
  id: str(undefined, '1'),
  name: example('Survival'),
  slug: example('survival'),
  imageID: example('survival'),
  imageType: example('png'),
  priority: example('10'),
  isActive: flagStr(),
});
export type ServerRow = typeof ServerRow.static;

export interface NewItem {
  serverID: number;
  itemID: string;
  modelID?: number | null;
  name?: string;
  lore?: string;
  amount: number;
  durability: number;
  maxDurability: number;
  enchantments?: string;
  base64: string;
}

export interface ServerInput {
  name: string;
  slug?: string;
  imageID?: string;
  imageType?: string;
  priority?: number;
  isActive?: boolean;
}

export interface BazaarService {
  /** A user's stored items, oldest first, optionally on one server. Throws USER_NOT_FOUND. */
  itemsOf(userId: number, serverId?: number): Promise<ItemRow[]>;
  /** Stores an item. Throws USER_NOT_FOUND, SERVER_NOT_FOUND, or INSERT_ERROR when the storage is full. */
  addItem(userId: number, item: NewItem): Promise<void>;
  /** Removes one of the user's items. Throws DELETE_ERROR when the user has no such item. */
  deleteItem(userId: number, itemId: number): Promise<void>;

  listServers(): Promise<ServerRow[]>;
  /** Throws SERVER_NOT_FOUND. */
  getServer(id: number): Promise<ServerRow>;
  /** Throws CONFLICT when the slug is taken. */
  createServer(input: ServerInput): Promise<ServerRow>;
  updateServer(id: number, patch: Partial<ServerInput>): Promise<ServerRow>;
  /** Throws CONFLICT while items are stored on it (switch it off instead). */
  deleteServer(id: number): Promise<void>;
}

export const bazaarRef = createServiceRef<BazaarService>('bazaar');
