/**
 * What a hosted store (Tebex, CraftingStore) lets an owner take out, read into the same shapes and
 * brought here the same way: packages as products (an expiring one gives a role), customers as
 * players (an account by in-game name, its game UUID linked as `minecraft`), payments as imported
 * orders at their own dates (the buyer's history and the supporter boards), and the packages still
 * running as roles with their end dates. Each thing comes once, through its link row.
 */
import { DomainError } from '../../core/errors.ts';
import { addSeconds, now } from '../../core/format.ts';
import type { ImportedOrderInput, StoreCatalogue, StoreOrders } from '../store/contract.ts';
import type { UsersService } from '../users/contract.ts';
import { Importer, type Progress } from './importer.ts';
import type { Links } from './links.ts';

export interface HostedPeers {
  users: UsersService;
  catalogue?: StoreCatalogue;
  orders?: StoreOrders;
}

export interface HostedPackage {
  id: string;
  name: string;
  /** Cents. */
  price: number;
  category: { id: string; name: string };
  /** How long it runs, in days; 0 for a package that does not expire. */
  days: number;
  description?: string;
  /** Made hidden: its price was guessed (a CSV export lists no packages). */
  hidden?: boolean;
}

export interface HostedPlayer {
  name: string;
  /** The game UUID, when the store knows it. */
  uuid?: string;
  email?: string;
}

export interface HostedPayment {
  id: string;
  /** Stored UTC timestamp. */
  date: string;
  status: 'complete' | 'refunded' | 'other';
  /** Cents. */
  amount: number;
  currency: string;
  player: HostedPlayer;
  /** A package by the store's id, or by its name only (a CSV export). */
  packages: { id?: string; name: string; quantity: number }[];
}

const DAY = 86_400;

/** A role's slug from a package's name. */
function slugOf(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 64) || 'package'
  );
}

/** A UUID the way Mojang writes it with dashes, lower case; undefined for anything else. */
export function playerUuid(text: string | undefined | null): string | undefined {
  const hex = (text ?? '').replace(/-/g, '').toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) return undefined;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A payment's status there (`Complete`, `Refund`, `Chargeback`, `PAID`, …) as what it becomes here. */
export function paymentStatus(status: string): HostedPayment['status'] {
  const lower = status.trim().toLowerCase();
  if (['complete', 'completed', 'paid', 'delivered'].includes(lower)) return 'complete';
  if (/refund|chargeback|reversed/.test(lower)) return 'refunded';
  return 'other';
}

/** An ISO 8601 time or `YYYY-MM-DD HH:MM:SS` (UTC, as the stores export) as a stored UTC timestamp. */
export function storedTime(text: string | undefined): string | undefined {
  const trimmed = (text ?? '').trim();
  if (!/^\d{4}-\d{2}-\d{2}/.test(trimmed)) return undefined;
  const zoned = /[zZ]|[+-]\d{2}:?\d{2}$/.test(trimmed) ? trimmed : `${trimmed.replace(' ', 'T')}Z`;
  const date = new Date(zoned);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString().slice(0, 19).replace('T', ' ');
}

export abstract class HostedImport extends Importer {
  protected readonly peers: HostedPeers;
  /** `paymentApi` of the orders it brings, e.g. `tebex`. */
  readonly #store: string;
  /** The players this run brought or met, by their key (in a dry run, without an id here). */
  protected readonly players = new Map<string, { localId: number | undefined; player: HostedPlayer }>();
  /** Packages by id and by lower-cased name: a payment's lines find their product and price. */
  readonly #packages = new Map<string, HostedPackage>();
  /** Players reported once, not at each of their payments. */
  readonly #refused = new Set<string>();

  constructor(store: string, key: string, peers: HostedPeers, links: Links, dryRun: boolean, progress?: Progress) {
    super(key, links, dryRun, progress);
    this.#store = store;
    this.peers = peers;
  }

  /** A package as a product in a category of its store's; an expiring one gives a role for its days. */
  protected async package(pkg: HostedPackage): Promise<void> {
    this.#packages.set(`id:${pkg.id}`, pkg);
    this.#packages.set(`name:${pkg.name.toLowerCase()}`, pkg);
    const { catalogue, users } = this.peers;
    if (!catalogue) {
      this.notBrought(`Package ${pkg.id} (${pkg.name}): the store feature is off here.`);
      return;
    }
    try {
      const giveRoleId = pkg.days > 0 ? await this.#role(pkg, users) : 0;
      const categoryId = await this.once('category', pkg.category.id, async () => (await catalogue.createCategory({ name: pkg.category.name })).id);
      await this.once('product', pkg.id, async () => {
        const made = await catalogue.createProduct({
          categoryId: categoryId!,
          name: pkg.name,
          price: pkg.price,
          giveRoleId: giveRoleId ?? 0,
          details: pkg.description ?? '',
          duration: pkg.days > 0 ? pkg.days : -1,
          isActive: !pkg.hidden,
        });
        return made.id;
      });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      this.notBrought(`Package ${pkg.id} (${pkg.name}): ${err.message}`);
    }
  }

  /** The role an expiring package gives: made once, or met by its slug when this install has one. */
  #role(pkg: HostedPackage, users: UsersService): Promise<number | undefined> {
    return this.once('role', pkg.id, async () => {
      const slug = slugOf(pkg.name);
      const here = await users.findRoleBySlug(slug);
      if (here) return here.id;
      const made = await users.createRole({ name: pkg.name, slug, priority: 0, chatRoleID: '', usernameCSS: null, badgeCSS: null });
      return made.id;
    });
  }

  /** The player's key: its UUID, or its name when the store gave none. */
  protected playerKey(player: HostedPlayer): string {
    return player.uuid ?? `name:${player.name.toLowerCase()}`;
  }

  /**
   * A customer as a player: the account linked to its UUID here, or one made by its in-game name
   * (without a password: it sets one through the reset mail). A name taken here is reported, not merged.
   */
  protected async player(player: HostedPlayer): Promise<{ localId: number | undefined } | undefined> {
    const key = this.playerKey(player);
    const seen = this.players.get(key);
    if (seen) return seen;
    if (this.#refused.has(key)) return undefined;
    const { users } = this.peers;
    const linked = player.uuid ? await users.findByLinkedAccount('minecraft', player.uuid) : undefined;
    if (!linked && (await users.findByUsername(player.name)) && !(await this.links.localId(this.key, 'player', key))) {
      this.#refused.add(key);
      this.notBrought(`Player ${player.name}: an account of that name is here already, not linked to that UUID; its payments stay behind.`);
      return undefined;
    }
    try {
      const localId = await this.once('player', key, async () => {
        if (linked) return linked.id;
        const account = await this.#account(player);
        if (player.uuid) await users.linkAccount(account.id, 'minecraft', player.uuid);
        return account.id;
      });
      const brought = { localId, player };
      this.players.set(key, brought);
      return brought;
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      this.#refused.add(key);
      this.notBrought(`Player ${player.name}: ${err.message}`);
      return undefined;
    }
  }

  /** The account, with the email the store had unless an account here has it (the check comes before any write). */
  async #account(player: HostedPlayer): Promise<{ id: number }> {
    const { users } = this.peers;
    const fields = { username: player.name, creationIP: '0.0.0.0', isVerified: false };
    try {
      return await users.createAccount({ ...fields, email: player.email || null });
    } catch (err) {
      if (!(err instanceof DomainError && err.code === 'EMAIL_ALREADY_EXIST')) throw err;
      this.notBrought(`Player ${player.name}: the email ${player.email} belongs to another account here; brought without it.`);
      return users.createAccount({ ...fields, email: null });
    }
  }

  /** A payment as an imported order of its player's, at its date: the history and the boards count it. */
  protected async payment(payment: HostedPayment): Promise<void> {
    const { orders } = this.peers;
    if (payment.status === 'other') {
      this.notBrought(`Payment ${payment.id}: neither complete nor refunded there (pending, declined); not brought.`);
      return;
    }
    if (!orders) {
      this.notBrought(`Payment ${payment.id}: the store feature is off here.`);
      return;
    }
    const buyer = await this.player(payment.player);
    if (!buyer) return;
    const items: ImportedOrderInput['items'] = [];
    for (const line of payment.packages) {
      const pkg = this.#packages.get(line.id ? `id:${line.id}` : `name:${line.name.toLowerCase()}`);
      const productId = pkg && !this.report.dryRun ? await this.links.localId(this.key, 'product', pkg.id) : undefined;
      items.push({ productId: productId ?? 0, productName: line.name.slice(0, 128), quantity: line.quantity, unitPrice: pkg?.price ?? 0 });
    }
    await this.once('payment', payment.id, async () => {
      const { orderId } = await orders.importOrder({
        userId: buyer.localId!,
        total: payment.amount,
        currency: payment.currency,
        paymentApi: this.#store,
        paymentId: payment.id,
        creationDate: payment.date,
        refunded: payment.status === 'refunded',
        items,
      });
      return orderId;
    });
  }

  /**
   * Payments of a CSV export: the packages it names (by name only) become hidden products in
   * `category`, each priced from a payment of it alone, then the payments come in.
   */
  protected async fromPayments(payments: HostedPayment[], category: string): Promise<void> {
    const named = new Map<string, HostedPackage>();
    for (const payment of payments) {
      for (const line of payment.packages) {
        const key = line.name.toLowerCase();
        const alone = payment.packages.length === 1 && line.quantity === 1 && payment.status === 'complete';
        const known = named.get(key);
        if (!known || (alone && known.price === 0))
          named.set(key, {
            id: `name:${key}`.slice(0, 64),
            name: line.name.slice(0, 128),
            price: alone ? payment.amount : 0,
            category: { id: 'csv', name: category },
            days: 0,
            hidden: true,
          });
      }
    }
    for (const pkg of named.values()) await this.package(pkg);
    if (named.size)
      this.notBrought(
        `${named.size} products made from the CSV's package names are hidden: check their prices (taken from a payment of each alone) and what they run, then show them. A CSV does not say how long a package runs, so no roles come from it.`,
      );
    for (const payment of payments) await this.payment(payment);
  }

  /** A package still running for a player: its role until `since` plus the package's days. */
  protected async running(player: HostedPlayer, packageId: string, since: string): Promise<void> {
    const pkg = this.#packages.get(`id:${packageId}`);
    if (!pkg || pkg.days <= 0) return;
    const until = addSeconds(since, pkg.days * DAY);
    if (until <= now()) return;
    const buyer = await this.player(player);
    if (!buyer) return;
    const roleId = this.report.dryRun ? 0 : await this.links.localId(this.key, 'role', pkg.id);
    if (roleId === undefined) return;
    try {
      await this.once('role-held', `${this.playerKey(player)}:${pkg.id}`, async () => {
        await this.peers.users.grantRole(buyer.localId!, roleId, until);
        return 0;
      });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      this.notBrought(`Player ${player.name}: role of package ${pkg.name} not granted (${err.message})`);
    }
  }
}
