import type { AuditLog } from '../../core/audit.ts';
import { isUniqueViolation, type Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp, flag, formatMoney, now } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { count, empty, fields, sql, where } from '../../core/sql.ts';
import type { TableRecord } from '../../core/table.ts';
import type { UsersService } from '../users/contract.ts';
import type { BazaarService, ItemRow, NewItem, ServerInput, ServerRow } from './contract.ts';
import { BazaarItem, BazaarItemCount, BazaarServer } from './entities.ts';

const I = BazaarItem.c;
const S = BazaarServer.c;
const C = BazaarItemCount.c;

type Item = TableRecord<typeof BazaarItem>;
type Server = TableRecord<typeof BazaarServer>;

function toServerRow(s: Server): ServerRow {
  return {
    id: String(s.id),
    name: s.name,
    slug: s.slug,
    imageID: s.imageId,
    imageType: s.imageType,
    priority: String(s.priority),
    isActive: flag(s.isActive),
  };
}

/** A slug from a name: `EU Survival #1` → `eu-survival-1`. */
function slugify(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 64) || 'server'
  );
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

  readonly #audit: AuditLog;

  constructor(db: Database, users: UsersService, settings: SettingsService, opts: BazaarOptions, audit: AuditLog) {
    this.#db = db;
    this.#users = users;
    this.#settings = settings;
    this.#opts = opts;
    this.#audit = audit;
  }

  /** A staff change's audit entry, in its transaction. */
  #record(verb: string, id: number, summary: string, before?: unknown, after?: unknown): Promise<void> {
    return this.#audit.record({ action: `bazaar.server.${verb}`, target: { type: 'bazaar-server', id }, summary, before, after });
  }

  #toItemRow(i: Item): ItemRow {
    return {
      id: String(i.id),
      owner: String(i.owner),
      serverID: String(i.serverId),
      itemID: i.itemId,
      modelID: i.modelId === null ? null : String(i.modelId),
      name: i.name,
      lore: i.lore,
      amount: String(i.amount),
      durability: String(i.durability),
      maxDurability: String(i.maxDurability),
      enchantments: i.enchantments,
      base64: i.base64,
      description: i.description,
      price: formatMoney(i.price),
      sold: flag(i.sold),
      creationDate: displayTimestamp(i.creationDate, this.#settings.get().timezone),
    };
  }

  async itemsOf(userId: number, serverId?: number): Promise<ItemRow[]> {
    await this.#users.requireById(userId);
    const rows = await BazaarItem.select(
      this.#db,
      sql`${where(sql`${I.owner} = ${userId}`, serverId !== undefined && sql`${I.serverId} = ${serverId}`)} order by ${I.id}`,
    );
    return rows.map((r) => this.#toItemRow(r));
  }

  async addItem(userId: number, item: NewItem): Promise<void> {
    await this.#db.transaction(async () => {
      await this.#users.requireById(userId);
      // The server's row lock puts adds to one server in a line (no deadlocks between them), and a
      // server cannot be deleted under a new item.
      await this.#server(item.serverID, true);
      if (!(await this.#countIn(userId, item.serverID))) {
        throw new DomainError('INSERT_ERROR', `The storage is full: at most ${this.#opts.maxItemsPerServer} items per server.`);
      }
      await BazaarItem.insert(this.#db, {
        owner: userId,
        serverId: item.serverID,
        itemId: item.itemID,
        modelId: item.modelID ?? null,
        name: item.name ?? '',
        lore: item.lore ?? null,
        amount: item.amount,
        durability: item.durability,
        maxDurability: item.maxDurability,
        enchantments: item.enchantments ?? null,
        base64: item.base64,
        description: null,
        price: 0,
        sold: false,
        creationDate: now(),
      });
    });
  }

  /**
   * Counts one more item of `owner` on the server, or answers false when the cap is reached. A
   * conditional write, not a locking read: on Galera a lock holds on its own node only, while two
   * adds writing one count row conflict at commit and the one run again sees the other's item. A
   * delete of the server writes its count rows and its own row, which a new count row counts on.
   */
  async #countIn(owner: number, serverId: number): Promise<boolean> {
    const cap = this.#opts.maxItemsPerServer;
    const increment = async () =>
      (
        await this.#db.run(sql`update ${BazaarItemCount} set ${C.items} = ${C.items} + 1
      where ${C.owner} = ${owner} and ${C.serverId} = ${serverId}${cap > 0 ? sql` and ${C.items} < ${cap}` : empty}`)
      ).affectedRows > 0;
    if (await increment()) return true;
    try {
      await BazaarItemCount.insert(this.#db, { owner, serverId, items: 1 });
      await this.#db.run(sql`update ${BazaarServer} set ${S.storages} = ${S.storages} + 1 where ${S.id} = ${serverId}`);
      return true;
    } catch (err) {
      // The row is there: full, or another add made it first and this one counts on it.
      if (!isUniqueViolation(err)) throw err;
      return increment();
    }
  }

  async deleteItem(userId: number, itemId: number): Promise<void> {
    await this.#db.transaction(async () => {
      const [item] = await this.#db.query(
        sql`select ${fields({ server_id: I.serverId })} from ${BazaarItem} where ${I.id} = ${itemId} and ${I.owner} = ${userId}`,
      );
      // The delete's own count decides: another delete of the item may have come in between.
      const gone = item && (await this.#db.run(sql`delete from ${BazaarItem} where ${I.id} = ${itemId} and ${I.owner} = ${userId}`)).affectedRows > 0;
      if (!gone) throw new DomainError('DELETE_ERROR', `User ${userId} has no stored item with ID ${itemId}.`);
      await this.#db.run(sql`update ${BazaarItemCount} set ${C.items} = ${C.items} - 1 where ${C.owner} = ${userId} and ${C.serverId} = ${item.server_id}`);
    });
  }

  async listServers(): Promise<ServerRow[]> {
    return (await BazaarServer.select(this.#db, sql`order by ${S.priority}, ${S.id}`)).map(toServerRow);
  }

  async getServer(id: number): Promise<ServerRow> {
    return toServerRow(await this.#server(id, false));
  }

  /** The server, or SERVER_NOT_FOUND; `lock` holds its row until the transaction ends. */
  async #server(id: number, lock: boolean): Promise<Server> {
    const server = await BazaarServer.find(this.#db, id, lock ? 'update' : undefined);
    if (!server) throw new DomainError('SERVER_NOT_FOUND', `No bazaar server with ID ${id}.`);
    return server;
  }

  async createServer(input: ServerInput): Promise<ServerRow> {
    return this.#db.transaction(async () => {
      const slug = input.slug ?? slugify(input.name);
      const id = await this.#uniqueSlug(slug, () =>
        BazaarServer.insert(this.#db, {
          name: input.name,
          slug,
          imageId: input.imageID ?? '',
          imageType: input.imageType ?? '',
          priority: input.priority ?? 0,
          isActive: input.isActive ?? true,
        }),
      );
      const made = await this.getServer(id);
      await this.#record('create', id, `Added bazaar server ${input.name}`, undefined, made);
      return made;
    });
  }

  async updateServer(id: number, patch: Partial<ServerInput>): Promise<ServerRow> {
    return this.#db.transaction(async () => {
      const before = await this.getServer(id);
      await this.#server(id, true);
      const changes = {
        name: patch.name,
        slug: patch.slug,
        imageId: patch.imageID,
        imageType: patch.imageType,
        priority: patch.priority,
        isActive: patch.isActive,
      };
      await this.#uniqueSlug(patch.slug ?? '', () => BazaarServer.update(this.#db, id, changes));
      const after = await this.getServer(id);
      await this.#record('update', id, `Changed bazaar server ${after.name}`, before, after);
      return after;
    });
  }

  async deleteServer(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      await this.#server(id, true);
      const [stored] = await this.#db.query(sql`select ${fields({ n: count() })} from ${BazaarItem} where ${I.serverId} = ${id}`);
      const n = Number(stored?.n ?? 0);
      if (n > 0) throw new DomainError('CONFLICT', `Bazaar server ${id} still stores ${n} items; set isActive to 0 instead.`);
      await this.#db.run(sql`delete from ${BazaarItemCount} where ${C.serverId} = ${id}`);
      await this.#db.run(sql`delete from ${BazaarServer} where ${S.id} = ${id}`);
      await this.#record('delete', id, `Deleted bazaar server ${id}`);
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
