/**
 * A LeaderOS site read through its public API (docs/spec: the same API this server answers) with
 * its owner's key: users without passwords (they set one through the reset mail), their credit as
 * an opening balance in the ledger, their roles with expiries, vote links, tickets and the store's
 * categories and products. Each thing is brought in its own transaction together with its link
 * row (imports_links), whose unique key makes a second run, or one resumed after an interruption,
 * bring nothing twice.
 */
import { DomainError } from '../../core/errors.ts';
import { PERMANENT, now } from '../../core/format.ts';
import type { CreditsService } from '../credits/contract.ts';
import type { StoreCatalogue, StoreOrders } from '../store/contract.ts';
import type { SupportService } from '../support/contract.ts';
import type { UsersService } from '../users/contract.ts';
import type { VotesService } from '../votes/contract.ts';
import type { ImportReport, LeaderOsSource } from './contract.ts';
import { paymentStatus, storedTime } from './hosted.ts';
import { cents, Importer, type Progress, SourceError } from './importer.ts';
import type { Links } from './links.ts';

interface LeaderOsUser {
  id: string;
  username: string;
  email?: string | null;
  credit?: string;
  isVerified?: string;
  creationIP?: string;
  linkedAccounts?: Record<string, string> | unknown[];
}

interface LeaderOsRole {
  id: string;
  name: string;
  slug: string;
  priority?: string;
  chatRoleID?: string | null;
  expiryDate: string;
}

export interface LeaderOsPeers {
  users: UsersService;
  credits: CreditsService;
  votes?: VotesService;
  support?: SupportService;
  catalogue?: StoreCatalogue;
  orders?: StoreOrders;
}

/** An order as `/api/users/<id>/orders` lists it: without its lines. */
interface LeaderOsOrder {
  id: string;
  total: string;
  earnings?: string;
  type: string;
  status: string;
  creationDate: string;
}

interface LeaderOsProduct {
  id: string;
  giveRoleID?: string;
  name: string;
  details?: string;
  price: string;
  discountedPrice?: string;
  discountExpiryDate?: string;
  duration?: string;
  stock?: string;
  priority?: string;
  isFeaturedProduct?: string;
  gameStatus?: string;
  gameTitle?: string;
  gameDescription?: string;
  gameItem?: string;
  isActive?: string;
  imageID?: string;
}

interface LeaderOsCategory {
  id: string;
  name: string;
  slug?: string;
  priority?: string;
  gameStatus?: string;
  gameTitle?: string;
  gameDescription?: string;
  gameItem?: string;
  isActive?: string;
  subcategories?: LeaderOsCategory[];
  products?: LeaderOsProduct[];
}

interface LeaderOsTicket {
  id: string;
  accountID: string;
  categoryID: string;
  categoryName?: string;
  title: string;
  statusID: string;
  messages?: { id: string; accountID: string; message: string; creationDate: string }[];
}

export class LeaderOsImport extends Importer {
  readonly #source: LeaderOsSource;
  readonly #peers: LeaderOsPeers;
  readonly #maxMissing: number;
  /** The users of the source this run brought or met, by source id (in a dry run, without an id here). */
  readonly #users = new Map<string, number | undefined>();

  constructor(source: LeaderOsSource, peers: LeaderOsPeers, links: Links, dryRun: boolean, maxMissing: number, progress?: Progress) {
    super(`leaderos:${source.url.replace(/\/+$/, '')}`, links, dryRun, progress);
    this.#source = source;
    this.#peers = peers;
    this.#maxMissing = maxMissing;
  }

  /** A GET of the source's API; undefined for a 404 (an id with nothing behind it). */
  async #get<T>(path: string): Promise<T | undefined> {
    const url = `${this.#source.url.replace(/\/+$/, '')}${path}`;
    const res = await fetch(url, { headers: { 'x-api-key': this.#source.apiKey, accept: 'application/json' } });
    if (res.status === 404) return undefined;
    if (!res.ok) throw new SourceError(`${path} answered ${res.status}: check the site's address and its API key.`);
    return (await res.json()) as T;
  }

  async run(): Promise<ImportReport> {
    let missing = 0;
    for (let id = 1; missing < this.#maxMissing; id++) {
      const user = await this.#get<LeaderOsUser>(`/api/users/?userID=${id}`);
      if (!user) {
        missing++;
        continue;
      }
      missing = 0;
      await this.#user(user);
    }
    await this.#voteLinks();
    await this.#tickets();
    await this.#catalogue();
    this.report.notBrought.push('Passwords: a LeaderOS site does not give them out; each player sets one through the reset mail.');
    return this.report;
  }

  async #user(user: LeaderOsUser): Promise<void> {
    const { users, credits } = this.#peers;
    const taken = await users.findByUsername(user.username);
    if (taken && !(await this.links.localId(this.key, 'user', user.id))) {
      this.report.notBrought.push(`User ${user.id} (${user.username}): an account of that name is here already.`);
      return;
    }
    const roles = (await this.#get<LeaderOsRole[]>(`/api/users/${user.id}/roles`)) ?? [];
    const balance = cents(user.credit);
    if (user.credit !== undefined && balance === undefined)
      this.report.notBrought.push(`User ${user.id}: credit "${user.credit}" is not an amount; no opening balance.`);
    const localId = await this.once('user', user.id, async () => {
      const account = await users.createAccount({
        username: user.username,
        email: user.email || null,
        creationIP: user.creationIP || '0.0.0.0',
        isVerified: user.isVerified === '1',
      });
      const chat = !Array.isArray(user.linkedAccounts) ? user.linkedAccounts?.chat : undefined;
      if (chat) await users.linkAccount(account.id, 'chat', chat);
      if (balance) await credits.change(account.id, balance, { reason: 'import' });
      for (const role of roles) await this.#grant(account.id, user, role);
      return account.id;
    });
    this.#users.set(user.id, localId);
    await this.#orders(user, localId);
  }

  /**
   * A user's orders as imported orders at their dates: the history, and those paid with money the
   * boards. LeaderOS lists them without their lines, and its times carry no zone (taken as UTC).
   */
  async #orders(user: LeaderOsUser, localId: number | undefined): Promise<void> {
    const { orders } = this.#peers;
    if (!orders) return;
    const host = new URL(this.key.replace(/^leaderos:/, '')).host;
    for (const order of (await this.#get<LeaderOsOrder[]>(`/api/users/${user.id}/orders`)) ?? []) {
      const total = order.type === 'payment' && cents(order.earnings) ? cents(order.earnings) : cents(order.total);
      const date = storedTime(order.creationDate);
      const status = paymentStatus(order.status);
      if (total === undefined || !date || status === 'other') {
        this.report.notBrought.push(`Order ${order.id} of user ${user.id}: its total, date or status ("${order.status}") is not one.`);
        continue;
      }
      await this.once('order', order.id, async () => {
        const made = await orders.importOrder({
          userId: localId!,
          type: order.type === 'credit' ? 'credit' : 'payment',
          total,
          currency: '',
          paymentApi: 'leaderos',
          paymentId: `${host}:${order.id}`,
          creationDate: date,
          refunded: status === 'refunded',
          items: [],
        });
        return made.orderId;
      });
    }
  }

  /** A role held: the role itself brought once by its id (or met by its slug), then granted with its expiry. */
  async #grant(accountId: number, user: LeaderOsUser, role: LeaderOsRole): Promise<void> {
    const { users } = this.#peers;
    if (role.expiryDate !== PERMANENT && role.expiryDate <= now()) return;
    const roleId = await this.once('role', role.id, async () => {
      const here = await users.findRoleBySlug(role.slug);
      if (here) return here.id;
      const made = await users.createRole({
        name: role.name,
        slug: role.slug,
        priority: Number(role.priority) || 0,
        chatRoleID: role.chatRoleID ?? '',
        usernameCSS: null,
        badgeCSS: null,
      });
      return made.id;
    });
    try {
      await users.grantRole(accountId, roleId!, role.expiryDate === PERMANENT ? undefined : role.expiryDate);
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      this.report.notBrought.push(`User ${user.id} (${user.username}): role ${role.slug} not granted (${err.message})`);
    }
  }

  async #voteLinks(): Promise<void> {
    const { votes } = this.#peers;
    const links = (await this.#get<{ id: string; name: string; link: string }[]>('/api/vote-links')) ?? [];
    if (!votes) {
      if (links.length) this.report.notBrought.push(`${links.length} vote links: the votes feature is off here.`);
      return;
    }
    for (const link of links) {
      try {
        await this.once('vote-link', link.id, async () => Number((await votes.create({ name: link.name, link: link.link })).id));
      } catch (err) {
        if (!(err instanceof DomainError)) throw err;
        this.report.notBrought.push(`Vote link ${link.id} (${link.name}): ${err.message}`);
      }
    }
  }

  async #tickets(): Promise<void> {
    const { support } = this.#peers;
    const tickets = (await this.#get<LeaderOsTicket[]>('/api/support/tickets')) ?? [];
    if (!support) {
      if (tickets.length) this.report.notBrought.push(`${tickets.length} tickets: the support feature is off here.`);
      return;
    }
    for (const ticket of tickets) {
      const owner = this.#users.get(ticket.accountID);
      if (!this.#users.has(ticket.accountID)) {
        this.report.notBrought.push(`Ticket ${ticket.id} (${ticket.title}): its author, user ${ticket.accountID}, was not brought.`);
        continue;
      }
      await this.once('ticket', ticket.id, async () => {
        const categoryId = await this.once('support-category', ticket.categoryID, async () => {
          return Number((await support.createCategory(ticket.categoryName || `Category ${ticket.categoryID}`)).id);
        });
        const [first, ...rest] = ticket.messages ?? [];
        const id = await support.createTicket({
          author: { accountId: owner },
          categoryId: categoryId!,
          title: ticket.title,
          message: first?.message ?? ticket.title,
        });
        for (const message of rest) {
          const by = this.#users.get(message.accountID);
          // A reply by someone who is not the author is staff's; one whose writer was not brought keeps its text, unsigned.
          await support.postMessage(id, {
            author: by === undefined ? {} : { accountId: by },
            message: message.message,
            isAdmin: message.accountID !== ticket.accountID,
          });
        }
        // Replies move a ticket's status on; a closed one ends closed as it was.
        if (ticket.statusID === '4') await support.closeTicket(id);
        return id;
      });
    }
    if (tickets.length) this.report.notBrought.push('Tickets and their messages carry the date of the import, not the dates they were written.');
  }

  /** Categories with their subcategories and products, as the listing nests them; a product's role is the one the users' import brought. */
  async #catalogue(): Promise<void> {
    const { catalogue } = this.#peers;
    const listing = await this.#get<{ categories: LeaderOsCategory[] }>('/api/store/listing');
    if (!catalogue) {
      if (listing?.categories.length) this.report.notBrought.push('The store: the store feature is off here.');
      return;
    }
    let images = 0;
    const walk = async (category: LeaderOsCategory, parentId: number | undefined): Promise<void> => {
      const id = await this.once('category', category.id, async () => {
        const made = await catalogue.createCategory({
          name: category.name,
          ...(category.slug ? { slug: category.slug } : {}),
          parentId: parentId ?? 0,
          priority: Number(category.priority) || 0,
          gameStatus: category.gameStatus === '1',
          gameTitle: category.gameTitle ?? '',
          gameDescription: category.gameDescription ?? '',
          gameItem: category.gameItem ?? '',
          isActive: category.isActive !== '0',
        });
        return made.id;
      });
      for (const product of category.products ?? []) {
        if (product.imageID) images++;
        await this.#product(product, id);
      }
      for (const sub of category.subcategories ?? []) await walk(sub, id);
    };
    for (const category of listing?.categories ?? []) await walk(category, undefined);
    if (images) this.report.notBrought.push(`${images} product images: the API gives only their names; upload them again in the console.`);
  }

  async #product(product: LeaderOsProduct, categoryId: number | undefined): Promise<void> {
    const price = cents(product.price);
    if (price === undefined) {
      this.report.notBrought.push(`Product ${product.id} (${product.name}): price "${product.price}" is not an amount.`);
      return;
    }
    const roleSource = product.giveRoleID && product.giveRoleID !== '0' ? product.giveRoleID : undefined;
    const giveRoleId = roleSource ? await this.links.localId(this.key, 'role', roleSource) : 0;
    if (giveRoleId === undefined)
      this.report.notBrought.push(`Product ${product.id} (${product.name}): its role ${roleSource} is held by no user brought; set the role it gives by hand.`);
    try {
      await this.once('product', product.id, async () => {
        const made = await this.#peers.catalogue!.createProduct({
          categoryId: categoryId!,
          name: product.name,
          price,
          giveRoleId: giveRoleId ?? 0,
          details: product.details ?? '',
          discountedPrice: cents(product.discountedPrice) ?? 0,
          ...(product.discountExpiryDate ? { discountExpiryDate: product.discountExpiryDate } : {}),
          duration: Number(product.duration) || 0,
          stock: product.stock === undefined ? -1 : Number(product.stock),
          priority: Number(product.priority) || 0,
          isFeatured: product.isFeaturedProduct === '1',
          gameStatus: product.gameStatus === '1',
          gameTitle: product.gameTitle ?? '',
          gameDescription: product.gameDescription ?? '',
          gameItem: product.gameItem ?? '',
          isActive: product.isActive !== '0',
        });
        return made.id;
      });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      this.report.notBrought.push(`Product ${product.id} (${product.name}): ${err.message}`);
    }
  }
}
