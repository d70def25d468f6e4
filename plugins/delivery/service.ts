/**
 * Delivery: game servers, the commands a product runs on them, and the queue of rendered commands
 * the servers' plugins fetch. The service is the one face peers, routes and the console see; its
 * parts live beside it by concern: servers and commands admin (admin.ts), enqueueing (enqueue.ts,
 * rendering through render.ts), the game servers' protocol of poll, validate, claim and ack with
 * the lease sweeps (protocol.ts), and the admin queue views and health (views.ts). Its methods hand
 * the call straight to the part, adding no promise of their own on the polled paths.
 */
import type { CommandInput, CommandRow, DeliveryService, QueueFilter, Trigger } from './contract.ts';
import { DeliveryAdmin, chargebackCommands } from './admin.ts';
import { DeliveryEnqueue } from './enqueue.ts';
import type { DeliveryDeps, OrderDelivery } from './model.ts';
import { DeliveryProtocol } from './protocol.ts';
import { DeliveryViews } from './views.ts';

export type { DeliveryDeps, LeaseOptions } from './model.ts';

export class DbDeliveryService implements DeliveryService {
  readonly #deps: DeliveryDeps;
  readonly #admin: DeliveryAdmin;
  readonly #enqueue: DeliveryEnqueue;
  readonly #protocol: DeliveryProtocol;
  readonly #views: DeliveryViews;

  constructor(deps: DeliveryDeps) {
    this.#deps = deps;
    this.#admin = new DeliveryAdmin(deps);
    this.#enqueue = new DeliveryEnqueue(deps);
    this.#protocol = new DeliveryProtocol(deps);
    this.#views = new DeliveryViews(deps);
  }

  // ---- servers and commands admin

  /** A server's change reaches the poll's servers held in memory (the protocol's) at once. */
  readonly #forgetServers = () => this.#protocol.forgetServers();

  listServers() {
    return this.#admin.listServers();
  }

  getServer(id: number) {
    return this.#admin.getServer(id);
  }

  createServer(input: { name: string; isActive: boolean }) {
    return this.#admin.createServer(input);
  }

  updateServer(id: number, patch: { name?: string; isActive?: boolean }) {
    return this.#admin.updateServer(id, patch).finally(this.#forgetServers);
  }

  deleteServer(id: number) {
    return this.#admin.deleteServer(id).finally(this.#forgetServers);
  }

  rotateToken(id: number) {
    return this.#admin.rotateToken(id).finally(this.#forgetServers);
  }

  listCommands(productId: number) {
    return this.#admin.listCommands(productId);
  }

  createCommand(productId: number, input: CommandInput) {
    return this.#admin.createCommand(productId, input);
  }

  updateCommand(productId: number, commandId: number, patch: Partial<CommandInput>) {
    return this.#admin.updateCommand(productId, commandId, patch);
  }

  deleteCommand(productId: number, commandId: number) {
    return this.#admin.deleteCommand(productId, commandId);
  }

  /** The commands every chargeback runs (a payment refunded or disputed at the gateway), per game server. */
  chargebackCommands(): Promise<CommandRow[]> {
    return chargebackCommands(this.#deps.db);
  }

  addChargebackCommand(serverId: number, command: string) {
    return this.#admin.addChargebackCommand(serverId, command);
  }

  deleteChargebackCommand(id: number) {
    return this.#admin.deleteChargebackCommand(id);
  }

  // ---- the queue: enqueue (inside the caller's transaction)

  enqueue(trigger: Trigger, order: OrderDelivery) {
    return this.#enqueue.enqueue(trigger, order);
  }

  orderRefunded(order: OrderDelivery) {
    return this.#enqueue.orderRefunded(order);
  }

  ordersCleared(orderIds: number[]) {
    return this.#enqueue.ordersCleared(orderIds);
  }

  roleExpired(userId: number, roleId: number) {
    return this.#enqueue.roleExpired(userId, roleId);
  }

  chargeback(player: { userId: number; username: string; linkedAccounts: Record<string, string>; orderId: number }) {
    return this.#enqueue.chargeback(player);
  }

  // ---- the game servers' protocol and its sweeps

  serverOf(token: string) {
    return this.#protocol.serverByToken(token);
  }

  pluginQueue(token: string) {
    return this.#protocol.pluginQueue(token);
  }

  validate(token: string, ids: number[]) {
    return this.#protocol.validate(token, ids);
  }

  claim(token: string, limit: number, online: string[]) {
    return this.#protocol.claim(token, limit, online);
  }

  ack(token: string, ids: number[], result: 'done' | 'failed', message: string) {
    return this.#protocol.ack(token, ids, result, message);
  }

  expireLeases() {
    return this.#protocol.expireLeases();
  }

  wakeForOthers() {
    return this.#protocol.wakeForOthers();
  }

  // ---- admin queue views and health

  backlog() {
    return this.#views.backlog();
  }

  health() {
    return this.#views.health();
  }

  listQueue(filter: QueueFilter) {
    return this.#views.listQueue(filter);
  }

  redeliver(id: number) {
    return this.#views.redeliver(id);
  }

  cancel(id: number) {
    return this.#views.cancel(id);
  }
}
