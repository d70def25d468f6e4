/**
 * A Tebex webstore, read through its Plugin API (https://plugin.tebex.io, the owner's secret key in
 * `X-Tebex-Secret`): `/packages`, every page of `/payments?paged=N`, and each player's active
 * packages (`/player/<uuid>/packages`); or its payments CSV export (Payments → Export in its
 * control panel), for what the API does not reach. Brought as hosted.ts brings any hosted store.
 */
import type { ImportReport, TebexSource } from './contract.ts';
import { HostedImport, type HostedPackage, type HostedPeers, paymentStatus, playerUuid, storedTime } from './hosted.ts';
import { cents, type Progress, SourceError } from './importer.ts';
import type { Links } from './links.ts';
import { csvPayments } from './payments-csv.ts';

export const TEBEX_API = 'https://plugin.tebex.io';

/** A package as `GET /packages` lists it. */
interface TebexPackage {
  id: number;
  name: string;
  price: string | number;
  expiry_length?: number;
  /** `day`, `week`, `month` or `year`. */
  expiry_period?: string;
  category?: { id: number; name: string } | null;
  disabled?: boolean;
}

/** A payment as `GET /payments?paged=N` lists it. */
interface TebexPayment {
  id: number;
  amount: string | number;
  date: string;
  status: string;
  currency: { iso_4217: string; symbol?: string };
  email?: string | null;
  player: { id: number | string; name: string; uuid?: string | null };
  packages: { quantity: number; id: number; name: string }[];
}

interface TebexPage {
  current_page: number;
  last_page: number;
  data: TebexPayment[];
}

/** A package running for a player, as `GET /player/<uuid>/packages` lists it. */
interface TebexActivePackage {
  txn_id: string;
  date: string;
  quantity: number;
  package: { id: number; name: string };
}

const PERIOD_DAYS: Record<string, number> = { day: 1, week: 7, month: 30, year: 365 };

export class TebexImport extends HostedImport {
  readonly #source: TebexSource;

  constructor(source: TebexSource, peers: HostedPeers, links: Links, dryRun: boolean, progress?: Progress) {
    super('tebex', 'tebex', peers, links, dryRun, progress);
    this.#source = source;
  }

  async #get<T>(path: string): Promise<T | undefined> {
    const res = await fetch(`${TEBEX_API}${path}`, {
      headers: { 'x-tebex-secret': (this.#source as { secret: string }).secret, accept: 'application/json' },
    });
    if (res.status === 404) return undefined;
    if (!res.ok) throw new SourceError(`Tebex's ${path.replace(/\?.*/, '')} answered ${res.status}: check the secret key (Tebex → Game servers).`);
    return (await res.json()) as T;
  }

  async run(): Promise<ImportReport> {
    if ('csv' in this.#source) {
      const { payments, unread } = csvPayments(this.#source.csv, paymentStatus);
      for (const line of unread) this.notBrought(line);
      await this.fromPayments(payments, 'Tebex');
      return this.report;
    }
    for (const pkg of (await this.#get<TebexPackage[]>('/packages')) ?? []) await this.#package(pkg);
    for (let page = 1; ; page++) {
      const answer = await this.#get<TebexPage>(`/payments?paged=${page}`);
      for (const payment of answer?.data ?? []) await this.#payment(payment);
      if (!answer || page >= answer.last_page) break;
    }
    for (const { player } of [...this.players.values()]) {
      if (!player.uuid) continue;
      const active = (await this.#get<TebexActivePackage[]>(`/player/${player.uuid.replace(/-/g, '')}/packages`)) ?? [];
      for (const running of active) {
        const since = storedTime(running.date);
        if (since) await this.running(player, String(running.package.id), since);
      }
    }
    this.notBrought("Package commands and Tebex's own delivery: set what each product runs in the console.");
    return this.report;
  }

  async #package(pkg: TebexPackage): Promise<void> {
    const price = cents(pkg.price);
    if (price === undefined) {
      this.notBrought(`Package ${pkg.id} (${pkg.name}): price "${pkg.price}" is not an amount.`);
      return;
    }
    const days = (pkg.expiry_length ?? 0) * (PERIOD_DAYS[pkg.expiry_period ?? ''] ?? 0);
    const category = pkg.category ? { id: String(pkg.category.id), name: pkg.category.name } : { id: '0', name: 'Tebex' };
    const hosted: HostedPackage = { id: String(pkg.id), name: pkg.name, price, category, days };
    await this.package(hosted);
  }

  async #payment(payment: TebexPayment): Promise<void> {
    const amount = cents(payment.amount);
    const date = storedTime(payment.date);
    if (amount === undefined || !date || !payment.player?.name) {
      this.notBrought(`Payment ${payment.id}: its amount, date or player is not one.`);
      return;
    }
    await this.payment({
      id: String(payment.id),
      date,
      status: paymentStatus(payment.status),
      amount,
      currency: payment.currency?.iso_4217 ?? 'USD',
      player: { name: payment.player.name, uuid: playerUuid(payment.player.uuid), email: payment.email ?? undefined },
      packages: payment.packages.map((p) => ({ id: String(p.id), name: p.name, quantity: p.quantity })),
    });
  }
}
