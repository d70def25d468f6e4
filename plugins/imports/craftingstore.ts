/**
 * A CraftingStore webstore, read through its API v7 (https://api.craftingstore.net/v7, the owner's
 * token in the `token` header): `/packages` and every page of `/payments?page=N`; or its payments
 * CSV export. Brought as hosted.ts brings any hosted store. Its API lists no running packages, so
 * no role comes with a player (reported).
 */
import type { CraftingStoreSource, ImportReport } from './contract.ts';
import { HostedImport, type HostedPeers, paymentStatus, playerUuid, storedTime } from './hosted.ts';
import { cents, type Progress, SourceError } from './importer.ts';
import type { Links } from './links.ts';
import { csvPayments } from './payments-csv.ts';

export const CRAFTINGSTORE_API = 'https://api.craftingstore.net/v7';

interface Answer<T> {
  success: boolean;
  data: T;
  meta?: { pagination?: { current_page: number; total_pages: number } };
}

/** A package as `GET /packages` lists it. */
interface CraftingStorePackage {
  id: number;
  name: string;
  price: number | string;
  category?: { id: number; name: string } | null;
}

/** A payment as `GET /payments?page=N` lists it: one row a package bought. */
interface CraftingStorePayment {
  id: number;
  transactionId?: string;
  inGameName: string;
  uuid?: string | null;
  email?: string | null;
  price: number | string;
  currency?: string;
  packageId?: number | null;
  packageName: string;
  status: string;
  createdAt?: string;
  timestamp?: number;
}

export class CraftingStoreImport extends HostedImport {
  readonly #source: CraftingStoreSource;

  constructor(source: CraftingStoreSource, peers: HostedPeers, links: Links, dryRun: boolean, progress?: Progress) {
    super('craftingstore', 'craftingstore', peers, links, dryRun, progress);
    this.#source = source;
  }

  async #get<T>(path: string): Promise<Answer<T>> {
    const res = await fetch(`${CRAFTINGSTORE_API}${path}`, { headers: { token: (this.#source as { token: string }).token, accept: 'application/json' } });
    const body = res.ok ? ((await res.json()) as Answer<T>) : undefined;
    if (!body?.success)
      throw new SourceError(`CraftingStore's ${path.replace(/\?.*/, '')} answered ${res.status}: check the API token (CraftingStore → Settings → API).`);
    return body;
  }

  async run(): Promise<ImportReport> {
    if ('csv' in this.#source) {
      const { payments, unread } = csvPayments(this.#source.csv, paymentStatus);
      for (const line of unread) this.notBrought(line);
      await this.fromPayments(payments, 'CraftingStore');
      return this.report;
    }
    for (const pkg of (await this.#get<CraftingStorePackage[]>('/packages')).data) {
      const price = cents(pkg.price);
      if (price === undefined) {
        this.notBrought(`Package ${pkg.id} (${pkg.name}): price "${pkg.price}" is not an amount.`);
        continue;
      }
      const category = pkg.category ? { id: String(pkg.category.id), name: pkg.category.name } : { id: '0', name: 'CraftingStore' };
      await this.package({ id: String(pkg.id), name: pkg.name, price, category, days: 0 });
    }
    for (let page = 1; ; page++) {
      const answer = await this.#get<CraftingStorePayment[]>(`/payments?page=${page}`);
      for (const payment of answer.data) await this.#payment(payment);
      const pages = answer.meta?.pagination;
      if (!pages || page >= pages.total_pages || !answer.data.length) break;
    }
    this.notBrought("Running packages: CraftingStore's API does not list them, so no role comes with a player; grant them in the console.");
    return this.report;
  }

  async #payment(payment: CraftingStorePayment): Promise<void> {
    const amount = cents(payment.price);
    const date = payment.createdAt
      ? storedTime(payment.createdAt)
      : payment.timestamp
        ? storedTime(new Date(payment.timestamp * 1000).toISOString())
        : undefined;
    if (amount === undefined || !date || !payment.inGameName) {
      this.notBrought(`Payment ${payment.id}: its price, date or player is not one.`);
      return;
    }
    await this.payment({
      id: String(payment.id),
      date,
      status: paymentStatus(payment.status),
      amount,
      currency: /^[A-Za-z]{3}$/.test(payment.currency ?? '') ? payment.currency!.toUpperCase() : 'USD',
      player: { name: payment.inGameName, uuid: playerUuid(payment.uuid), email: payment.email ?? undefined },
      packages: [{ ...(payment.packageId ? { id: String(payment.packageId) } : {}), name: payment.packageName, quantity: 1 }],
    });
  }
}
