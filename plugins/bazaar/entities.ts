import { defineEntity, p } from '../../core/table.ts';

export const BazaarServer = defineEntity({
  name: 'BazaarServer',
  tableName: 'bazaar_servers',
  properties: {
    id: p.integer().primary().autoincrement(),
    name: p.string().length(64),
    slug: p.string().length(64).unique(),
    imageId: p.string().length(64),
    imageType: p.string().length(16),
    priority: p.integer(),
    isActive: p.boolean(),
    /**
     * Count rows of players storing on it: a player's first item writes this row, so a delete of
     * the server on another Galera node meets it in certification (later items meet its count row).
     */
    storages: p.integer().default(0),
  },
});

/**
 * Free-text item columns are `mediumtext`: a field may be as long as the body field limit
 * (64 KiB), one byte more than MySQL's `text` holds, and a too-long value must never fail an insert.
 */
const longText = () => p.text().columnType('mediumtext');

export const BazaarItem = defineEntity({
  name: 'BazaarItem',
  tableName: 'bazaar_items',
  indexes: [{ properties: ['owner', 'serverId'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    owner: p.integer(),
    serverId: p.integer().index(),
    itemId: p.string().length(128),
    modelId: p.integer().nullable(),
    name: longText(),
    lore: longText().nullable(),
    amount: p.integer(),
    durability: p.integer(),
    maxDurability: p.integer(),
    enchantments: longText().nullable(),
    /** The game's serialized item, byte for byte as the plugin sent it. */
    base64: longText(),
    description: longText().nullable(),
    /** Integer cents. */
    price: p.integer(),
    sold: p.boolean(),
    creationDate: p.string().length(19),
  },
});

/**
 * How many items one user keeps on one server: every add and delete writes this row, so two adds
 * racing for the last place write the same row and the database (on Galera, certification) decides.
 */
export const BazaarItemCount = defineEntity({
  name: 'BazaarItemCount',
  tableName: 'bazaar_item_counts',
  uniques: [{ properties: ['owner', 'serverId'] }],
  properties: {
    id: p.integer().primary().autoincrement(),
    owner: p.integer(),
    serverId: p.integer().index(),
    items: p.integer(),
  },
});

export const entities = [BazaarServer, BazaarItem, BazaarItemCount];
