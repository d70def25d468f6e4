/** Servers and commands admin: the game servers and their tokens, the commands products and chargebacks run on them. */
import { hash, randomBytes } from 'node:crypto';
import type { AuditLog } from '../../core/audit.ts';
import type { Database } from '../../core/db.ts';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp, hasControlCharacter, now } from '../../core/format.ts';
import type { SettingsService } from '../../core/settings.ts';
import { sql } from '../../core/sql.ts';
import type { StoreCatalogue } from '../store/contract.ts';
import type { CommandInput, CommandRow, ServerRow, Trigger } from './contract.ts';
import { DeliveryCommand, DeliveryQueue, DeliveryServer } from './entities.ts';
import { CHARGEBACK_PRODUCT, type Command, type DeliveryDeps, type Server } from './model.ts';
import { checkPlaceholders, CONTROL_WHY } from './render.ts';

const S = DeliveryServer.c;
const C = DeliveryCommand.c;
const Q = DeliveryQueue.c;

/** A token as stored: SHA-256, hex (one-shot `hash`: half the CPU of a Hash object for a short text). */
export const hashToken = (token: string) => hash('sha256', token, 'hex');

function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** A command as the API names it, as the table does. */
function commandRow(c: Command): CommandRow {
  return {
    id: String(c.id),
    productID: String(c.productId),
    serverID: String(c.serverId),
    command: c.command,
    trigger: c.runOn,
    requireOnline: c.requireOnline,
    perUnit: c.perUnit,
  };
}

/** The columns of the fields given (undefined for the others, which a write leaves as they are). */
function commandColumns(c: Partial<CommandInput>): Partial<Omit<Command, 'id' | 'productId'>> {
  return { serverId: c.serverID, command: c.command, runOn: c.trigger, requireOnline: c.requireOnline, perUnit: c.perUnit };
}

/** The commands every chargeback runs (a payment refunded or disputed at the gateway), per game server. */
export async function chargebackCommands(db: Database): Promise<CommandRow[]> {
  return (await DeliveryCommand.select(db, sql`where ${C.productId} = ${CHARGEBACK_PRODUCT} and ${C.runOn} = 'chargeback' order by ${C.id}`)).map(commandRow);
}

export class DeliveryAdmin {
  readonly #db: Database;
  readonly #settings: SettingsService;
  readonly #store: StoreCatalogue;
  readonly #audit: AuditLog;

  constructor(deps: DeliveryDeps) {
    this.#db = deps.db;
    this.#settings = deps.settings;
    this.#store = deps.store;
    this.#audit = deps.audit;
  }

  // ---- game servers

  #serverRow(s: Server): ServerRow {
    const { timezone } = this.#settings.get();
    return {
      id: String(s.id),
      name: s.name,
      isActive: s.isActive,
      lastSeenDate: s.lastSeenDate === null ? null : displayTimestamp(s.lastSeenDate, timezone),
      creationDate: displayTimestamp(s.creationDate, timezone),
    };
  }

  async listServers(): Promise<ServerRow[]> {
    return (await DeliveryServer.select(this.#db, sql`order by ${S.id}`)).map((server) => this.#serverRow(server));
  }

  async getServer(id: number): Promise<ServerRow> {
    return this.#serverRow(await this.#server(id));
  }

  async #server(id: number): Promise<Server> {
    const server = await DeliveryServer.find(this.#db, id);
    if (!server) throw new DomainError('DELIVERY_SERVER_NOT_FOUND', `No game server with ID ${id}.`);
    return server;
  }

  async createServer(input: { name: string; isActive: boolean }): Promise<ServerRow & { token: string }> {
    const token = newToken();
    return this.#db.transaction(async () => {
      const id = await DeliveryServer.insert(this.#db, {
        name: input.name,
        tokenHash: hashToken(token),
        isActive: input.isActive,
        lastSeenDate: null,
        creationDate: now(),
      });
      const server = await this.getServer(id);
      await this.#record('server.create', id, `Added game server ${server.name}`, undefined, server);
      return { ...server, token };
    });
  }

  /** A staff change's audit entry, in its transaction (never a token). */
  #record(action: string, id: number, summary: string, before?: unknown, after?: unknown): Promise<void> {
    const type = action.startsWith('server.') ? 'server' : 'command';
    return this.#audit.record({ action: `delivery.${action}`, target: { type, id }, summary, before, after });
  }

  async updateServer(id: number, patch: { name?: string; isActive?: boolean }): Promise<ServerRow> {
    return this.#db.transaction(async () => {
      const before = await this.getServer(id);
      await DeliveryServer.update(this.#db, id, { name: patch.name, isActive: patch.isActive });
      const after = await this.getServer(id);
      await this.#record('server.update', id, `Changed game server ${after.name}`, before, after);
      return after;
    });
  }

  async deleteServer(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const before = await this.getServer(id);
      await this.#db.run(sql`delete from ${DeliveryServer} where ${S.id} = ${id}`);
      await this.#record('server.delete', id, `Deleted game server ${before.name}`, before);
      // Its commands could never be fetched again; its queued rows stay for the record, cancelled.
      await this.#db.run(sql`delete from ${DeliveryCommand} where ${C.serverId} = ${id}`);
      await this.#db.run(sql`update ${DeliveryQueue} set ${Q.status} = 'cancelled', ${Q.updatedDate} = ${now()}
        where ${Q.serverId} = ${id} and ${Q.status} in ('waiting', 'claimed')`);
    });
  }

  async rotateToken(id: number): Promise<ServerRow & { token: string }> {
    const token = newToken();
    return this.#db.transaction(async () => {
      if ((await DeliveryServer.update(this.#db, id, { tokenHash: hashToken(token) })) === 0)
        throw new DomainError('DELIVERY_SERVER_NOT_FOUND', `No game server with ID ${id}.`);
      const server = await this.getServer(id);
      await this.#record('server.token', id, `Made a new token for game server ${server.name}`);
      return { ...server, token };
    });
  }

  // ---- products' commands

  async #requireProduct(productId: number): Promise<void> {
    if ((await this.#store.productName(productId)) === undefined) throw new DomainError('PRODUCT_NOT_FOUND', `No product with ID ${productId}.`);
  }

  async listCommands(productId: number): Promise<CommandRow[]> {
    await this.#requireProduct(productId);
    return (await DeliveryCommand.select(this.#db, sql`where ${C.productId} = ${productId} order by ${C.id}`)).map(commandRow);
  }

  async #command(productId: number, commandId: number): Promise<Command> {
    const [command] = await DeliveryCommand.select(this.#db, sql`where ${C.id} = ${commandId} and ${C.productId} = ${productId}`);
    if (!command) throw new DomainError('DELIVERY_COMMAND_NOT_FOUND', `Product ${productId} has no command with ID ${commandId}.`);
    return command;
  }

  async #getCommand(productId: number, commandId: number): Promise<CommandRow> {
    return commandRow(await this.#command(productId, commandId));
  }

  async #check(input: CommandInput): Promise<void> {
    if (hasControlCharacter(input.command)) throw new DomainError('VALIDATION_ERROR', `command: ${CONTROL_WHY}.`);
    checkPlaceholders(input.command);
    await this.getServer(input.serverID);
  }

  async createCommand(productId: number, input: CommandInput): Promise<CommandRow> {
    return this.#db.transaction(async () => {
      await this.#requireProduct(productId);
      await this.#check(input);
      const id = await DeliveryCommand.insert(this.#db, { productId, ...commandColumns(input) });
      const after = await this.#getCommand(productId, id);
      await this.#record('command.create', id, `Product ${productId} runs "${input.command}"`, undefined, after);
      return after;
    });
  }

  async updateCommand(productId: number, commandId: number, patch: Partial<CommandInput>): Promise<CommandRow> {
    return this.#db.transaction(async () => {
      const current = await this.#command(productId, commandId);
      const next: CommandInput = {
        serverID: patch.serverID ?? current.serverId,
        command: patch.command ?? current.command,
        trigger: patch.trigger ?? (current.runOn as Trigger),
        requireOnline: patch.requireOnline ?? current.requireOnline,
        perUnit: patch.perUnit ?? current.perUnit,
      };
      await this.#check(next);
      await DeliveryCommand.update(this.#db, commandId, commandColumns(patch));
      const after = await this.#getCommand(productId, commandId);
      await this.#record('command.update', commandId, `Product ${productId} runs "${next.command}"`, commandRow(current), after);
      return after;
    });
  }

  async deleteCommand(productId: number, commandId: number): Promise<void> {
    await this.#db.transaction(async () => {
      const before = await this.#getCommand(productId, commandId);
      await this.#db.run(sql`delete from ${DeliveryCommand} where ${C.id} = ${commandId} and ${C.productId} = ${productId}`);
      await this.#record('command.delete', commandId, `Product ${productId} no longer runs "${before.command}"`, before);
    });
  }

  // ---- chargeback commands

  async addChargebackCommand(serverId: number, command: string): Promise<CommandRow> {
    return this.#db.transaction(async () => {
      await this.#check({ serverID: serverId, command, trigger: 'purchase', requireOnline: false, perUnit: false });
      const id = await DeliveryCommand.insert(this.#db, {
        productId: CHARGEBACK_PRODUCT,
        serverId,
        command,
        runOn: 'chargeback',
        requireOnline: false,
        perUnit: false,
      });
      await this.#audit.record({
        action: 'delivery.chargeback.create',
        target: { type: 'command', id },
        summary: `Chargebacks run "${command}"`,
        after: { serverId, command },
      });
      return this.#getCommand(CHARGEBACK_PRODUCT, id);
    });
  }

  async deleteChargebackCommand(id: number): Promise<void> {
    await this.#db.transaction(async () => {
      const [current] = await DeliveryCommand.select(this.#db, sql`where ${C.id} = ${id} and ${C.productId} = ${CHARGEBACK_PRODUCT}`);
      if (!current) throw new DomainError('DELIVERY_COMMAND_NOT_FOUND', `No chargeback command with ID ${id}.`);
      await this.#db.run(sql`delete from ${DeliveryCommand} where ${DeliveryCommand.c.id} = ${id}`);
      await this.#audit.record({
        action: 'delivery.chargeback.delete',
        target: { type: 'command', id },
        summary: `Chargebacks no longer run "${current.command}"`,
        before: { serverId: current.serverId, command: current.command },
      });
    });
  }
}
