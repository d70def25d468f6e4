/**
 * A cap on the connections one remote address may hold open, applied when the connection is
 * accepted: before a byte of the request, so a client sending its headers slowly (or never)
 * cannot hold more than its share of `server.maxConnections`.
 */
import { BlockList, isIPv4, type Server, type Socket } from 'node:net';

export interface ConnectionCap {
  /** Open connections one address may hold; more are closed as they arrive. */
  maxPerAddress: number;
  /** Addresses and CIDR ranges without the cap: a reverse proxy carries every client's requests over its own connections. */
  uncapped: readonly string[];
}

/** An IPv4 client of a dual-stack socket shows as `::ffff:a.b.c.d`: the same address as `a.b.c.d`. */
function plainAddress(address: string): string {
  return address.startsWith('::ffff:') && isIPv4(address.slice(7)) ? address.slice(7) : address;
}

/** A list of addresses and CIDR ranges (`10.0.0.0/8`, `::1`); throws on an entry that is neither. */
export function addressList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, bits] = entry.split('/') as [string, string | undefined];
    const type = isIPv4(address) ? 'ipv4' : 'ipv6';
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(bits), type);
  }
  return list;
}

/** Counts open connections per remote address on `server` and closes those over the cap as they arrive. */
export function capConnections(server: Server, cap: ConnectionCap): void {
  const uncapped = addressList(cap.uncapped);
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    if (!socket.remoteAddress) return;
    const address = plainAddress(socket.remoteAddress);
    if (uncapped.check(address, isIPv4(address) ? 'ipv4' : 'ipv6')) return;
    const count = (open.get(address) ?? 0) + 1;
    if (count > cap.maxPerAddress) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = open.get(address)! - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

/** True when `entry` is an IP address or a CIDR range (`10.0.0.0/8`, `fd00::/8`): checked at boot. */
export function isAddressOrRange(entry: string): boolean {
  try {
    addressList([entry]);
    return true;
  } catch {
    return false;
  }
}
