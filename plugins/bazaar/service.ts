import { isUniqueViolation, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp, flag, formatMoney, now } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import type { UsersService } from '../users/contract.ts';
import type { BazaarService, ItemRow, NewItem, ServerInput, ServerRow } from './contract.ts';

interface ItemRecord {
  id: number; owner: number; server_id: number; item_id: string; model_id: number | null; name: string;
  lore: string | null; amount: number; durability: number; max_durability: number; enchantments: string | null;
  base64: string; description: string | null; price: number; sold: number | boolean; creation_date: string;
}
interface ServerRecord {
  id: number; name: string; slug: string; image_id: string; image_type: string; priority: number; is_active: number | boolean;
}

const ITEM_COLUMNS = 'id, owner, server_id, item_id, model_id, name, lore, amount, durability, max_durability, enchantments, base64, description, price, sold, creation_date';
const SERVER_COLUMNS = 'id, name, slug, image_id, image_type, priority, is_active';

function toServerRow(r: ServerRecord): ServerRow {
  return {
    id: String(r.id), name: r.name, slug: r.slug, imageID: r.image_id, imageType: r.image_type,
    priority: String(r.priority), isActive: flag(Number(r.is_active)),
  };
}

/** A slug from a name: `EU Survival #1` → `eu-survival-1`. */
function slugify(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64) || 'server';
}

export interface BazaarOptions {
  /** Most items one user may keep on one server; 0 = no cap. */
  maxItemsPerServer: number;
}

export class DbBazaarService implements BazaarService {
  readonly #db: Database;
  readonly #users: UsersService;
  readonly #settings: SettingsService;
  readonly #opts: BazaarOptions;

  constructor(db: Database, users: UsersService, settings: SettingsService, opts: BazaarOptions) {
    this.#db = db;
    this.#users = users;
    this.#settings = settings;
    this.#opts = opts;
  }

  #toItemRow(r: ItemRecord): ItemRow {
    return {
      id: String(r.id), owner: String(r.owner), serverID: String(r.server_id), itemID: r.item_id,
      modelID: r.model_id === null ? null : String(r.model_id), name: r.name, lore: r.lore, amount: String(r.amount),
      durability: String(r.durability), maxDurability: String(r.max_durability), enchantments: r.enchantments,
      base64: r.base64, description: r.description, price: formatMoney(Number(r.price)), sold: flag(Number(r.sold)),
      creationDate: displayTimestamp(r.creation_date, this.#settings.get().timezone),
    };
  }

  async itemsOf(userId: number, serverId?: number): Promise<ItemRow[]> {
    await this.#users.requireById(userId);
    const onServer = serverId === undefined ? '' : ' and server_id = ?';
    const rows = await this.#db.query<ItemRecord>(`select ${ITEM_COLUMNS} from bazaar_items where owner = ?${onServer} order by id`,
      serverId === undefined ? [userId] : [userId, serverId]);
    return rows.map((r) => this.#toItemRow(r));
  }

  async addItem(userId: number, item: NewItem): Promise<void> {
    await this.#db.transaction(async () => {
      await this.#users.requireById(userId);
      // The server's row lock puts adds to one server in a line (no deadlocks between them), and a
      // server cannot be deleted under a new item.
      await this.#server(item.serverID, true);
      const cap = this.#opts.maxItemsPerServer;
      if (cap > 0) {
        // A locking read: on MySQL a plain one would count from the snapshot taken before the wait.
        const [held] = await this.#db.query<{ n: number }>(
          `select count(*) as n from bazaar_items where owner = ? and server_id = ?${this.#db.forUpdate}`, [userId, item.serverID]);
        if (Number(held?.n ?? 0) >= cap) {
          throw new DomainError('INSERT_ERROR', `The storage is full: at most ${cap} items per server.`);
        }
      }
      await this.#db.run(
        `insert into bazaar_items (owner, server_id, item_id, model_id, name, lore, amount, durability, max_durability, enchantments, base64, description, price, sold, creation_date)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, null, 0, ?, ?)`,
        [userId, item.serverID, item.itemID, item.modelID ?? null, item.name ?? '', item.lore ?? null, item.amount, item.durability,
          item.maxDurability, item.enchantments ?? null, item.base64, false, now()]);
    });
  }

  async deleteItem(userId: number, itemId: number): Promise<void> {
    const { affectedRows } = await this.#db.run('delete from bazaar_items where id = ? and owner = ?', [itemId, userId]);
    if (affectedRows === 0) throw new DomainError('DELETE_ERROR', `User ${userId} has no stored item with ID ${itemId}.`);
  }

  async listServers(): Promise<ServerRow[]> {
    const rows = await this.#db.query<ServerRecord>(`select ${SERVER_COLUMNS} from bazaar_servers order by priority, id`);
    return rows.map(toServerRow);
  }

  getServer(id: number): Promise<ServerRow> {
    return this.#server(id, false);
  }

  /** The server, or SERVER_NOT_FOUND; `lock` holds its row until the transaction ends. */
  async #server(id: number, lock: boolean): Promise<ServerRow> {
    const [row] = await this.#db.query<ServerRecord>(`select ${SERVER_COLUMNS} from bazaar_servers where id = ?${lock ? this.#db.forUpdate : ''}`, [id]);
    if (!row) throw new DomainError('SERVER_NOT_FOUND', `No bazaar server with ID ${id}.`);
    return toServerRow(row);
  }

  async createServer(input: ServerInput): Promise<ServerRow> {
    return this.#db.transaction(async () => {
      const slug = input.slug ?? slugify(input.name);
      const { insertId } = await this.#uniqueSlug(slug, () => this.#db.run(
        'insert into bazaar_servers (name, slug, image_id, image_type, priority, is_active) values (?, ?, ?, ?, ?, ?)',
        [input.name, slug, input.imageID ?? '', input.imageType ?? '', input.priority ?? 0, input.isActive ?? true]));
      return this.getServer(insertId);
    });
  }

  async updateServer(id: number, patch: Partial<ServerInput>): Promise<ServerRow> {
    return this.#db.transaction(async () => {
      const current = await this.#server(id, true);
      const next = {
        name: patch.name ?? current.name,
        slug: patch.slug ?? current.slug,
        imageID: patch.imageID ?? current.imageID,
        imageType: patch.imageType ?? current.imageType,
        priority: patch.priority ?? Number(current.priority),
        isActive: patch.isActive ?? current.isActive === '1',
      };
      await this.#uniqueSlug(next.slug, () => this.#db.run(
        'update bazaar_servers set name = ?, slug = ?, image_id = ?, image_type = ?, priority = ?, is_active = ? where id = ?',
        [next.name, next.slug, next.imageID, next.imageType, next.priority, next.isActive, id]));
      return this.getServer(id);
    });
  }

  async deleteServer(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      await this.#server(id, true);
      const [stored] = await this.#db.query<{ n: number }>('select count(*) as n from bazaar_items where server_id = ?', [id]);
      const n = Number(stored?.n ?? 0);
      if (n > 0) throw new DomainError('CONFLICT', `Bazaar server ${id} still stores ${n} items; set isActive to 0 instead.`);
      await this.#db.run('delete from bazaar_servers where id = ?', [id]);
    });
  }

  /** Runs a write that sets `slug`; the unique index turns a taken slug into CONFLICT. */
  async #uniqueSlug<T>(slug: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      if (isUniqueViolation(err)) throw new DomainError('CONFLICT', `A bazaar server with the slug "${slug}" exists already.`);
      throw err;
    }
  }
}
