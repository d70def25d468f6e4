/**
 * A hosted store's payments CSV export (Tebex's, CraftingStore's), read by its header: each column
 * is found by one of the names the stores give it, in any order and case, so an export with more
 * columns, or its columns moved, still reads.
 */
import type { HostedPayment } from './hosted.ts';
import { playerUuid, storedTime } from './hosted.ts';
import { cents } from './importer.ts';

/** The rows of an RFC 4180 CSV text: quoted fields may hold commas, quotes ("") and line breaks. */
export function csvRows(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  const body = text.replace(/^\uFEFF/, '');
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (quoted) {
      if (c === '"' && body[i + 1] === '"') field += body[++i];
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && body[i + 1] === '\n') i++;
      row.push(field);
      if (row.some((f) => f !== '')) rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  row.push(field);
  if (row.some((f) => f !== '')) rows.push(row);
  return rows;
}

/** The names each column goes by, lower case. */
const COLUMNS = {
  id: ['transaction id', 'transaction_id', 'txn_id', 'transaction', 'payment id', 'id'],
  date: ['date', 'created_at', 'created at', 'createdat', 'time', 'timestamp'],
  status: ['status'],
  amount: ['price', 'amount', 'total', 'paid'],
  currency: ['currency', 'currency code'],
  name: ['username', 'ign', 'player', 'player name', 'inGameName', 'name'].map((n) => n.toLowerCase()),
  uuid: ['uuid', 'player uuid', 'player_uuid', 'minecraft uuid'],
  email: ['email', 'e-mail'],
  packages: ['packages', 'package', 'packagename', 'package name', 'items', 'item', 'products', 'product'],
} as const;
const REQUIRED = ['id', 'date', 'amount', 'name', 'packages'] as const;

/** `VIP (x2), Fly` or `2x VIP; Fly`: the packages of a row with their quantities (`Keys x5` is a name). */
function packagesOf(text: string): HostedPayment['packages'] {
  return text
    .split(/[,;|]/)
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const after = /^(.*?)\s*\(x\s*(\d+)\)$/i.exec(part);
      const before = /^(\d+)\s*x\s+(.*)$/i.exec(part);
      if (after?.[1]) return { name: after[1], quantity: Number(after[2]) };
      if (before?.[2]) return { name: before[2], quantity: Number(before[1]) };
      return { name: part, quantity: 1 };
    });
}

/**
 * The payments of an export, and a sentence for each row that does not read. A header without one
 * of the needed columns is a sentence too, and no payments.
 */
export function csvPayments(text: string, status: (text: string) => HostedPayment['status']): { payments: HostedPayment[]; unread: string[] } {
  const [header, ...rows] = csvRows(text);
  const names = (header ?? []).map((h) => h.trim().toLowerCase());
  const at = Object.fromEntries(
    Object.entries(COLUMNS).map(([column, aliases]) => [column, aliases.map((a) => names.indexOf(a)).find((i) => i >= 0) ?? -1]),
  ) as Record<keyof typeof COLUMNS, number>;
  const missing = REQUIRED.filter((c) => at[c] < 0);
  if (missing.length) return { payments: [], unread: [`The CSV has no ${missing.join(', ')} column: its header is "${names.join(', ')}".`] };
  const payments: HostedPayment[] = [];
  const unread: string[] = [];
  rows.forEach((row, i) => {
    const cell = (c: keyof typeof COLUMNS) => (at[c] >= 0 ? (row[at[c]] ?? '').trim() : '');
    const amount = cents(cell('amount').replace(/^[^\d]+/, ''));
    const date = storedTime(cell('date'));
    const id = cell('id');
    if (!id || amount === undefined || !date || !cell('name')) {
      unread.push(`CSV line ${i + 2}: its ${!id ? 'id' : amount === undefined ? 'amount' : !date ? 'date' : 'player'} is not one; not brought.`);
      return;
    }
    payments.push({
      id: id.slice(0, 64),
      date,
      status: at.status >= 0 ? status(cell('status')) : 'complete',
      amount,
      currency: /^[A-Za-z]{3}$/.test(cell('currency')) ? cell('currency').toUpperCase() : 'USD',
      player: { name: cell('name'), uuid: playerUuid(cell('uuid')), email: cell('email') || undefined },
      packages: packagesOf(cell('packages')),
    });
  });
  return { payments, unread };
}
