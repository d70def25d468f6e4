/**
 * Addresses an admin or a player gives the server to call (webhook endpoints): the server must not
 * be made to call into the network it runs in (its own ports, a database, a cloud's metadata service)
 * and show what answered. Loopback, private, shared (CGNAT), link-local, multicast, unspecified and
 * reserved addresses are refused, IPv4-mapped IPv6 forms included, unless config's `outbound.allow`
 * lists them (an owner's receiver on their own network). The check is on the address connected to:
 * a name is checked as it is resolved for the connection (`lookup`), so a name that resolves, or
 * re-resolves, to a refused address is refused too, with no gap between the check and the use.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { type BlockList, isIP, type LookupFunction } from 'node:net';
import { addressList } from './connections.ts';

/** What each refused range is, for the message. BlockList checks an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) against the IPv4 ranges. */
const REFUSED: [kind: string, list: BlockList][] = [
  ['an unspecified', addressList(['0.0.0.0/8', '::/128'])],
  ['a loopback', addressList(['127.0.0.0/8', '::1/128'])],
  ['a private', addressList(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7', 'fec0::/10'])],
  ['a shared (CGNAT)', addressList(['100.64.0.0/10'])],
  ['a link-local', addressList(['169.254.0.0/16', 'fe80::/10'])],
  ['a multicast', addressList(['224.0.0.0/4', 'ff00::/8'])],
  // 240/4 holds the broadcast address; ::/96 the deprecated IPv4-compatible forms (`::127.0.0.1`).
  ['a reserved', addressList(['240.0.0.0/4', '::/96'])],
  // NAT64 and 6to4 carry an IPv4 address inside (64:ff9b::7f00:1 is 127.0.0.1 through a NAT64 gateway).
  ['an IPv4-embedding (NAT64, 6to4)', addressList(['64:ff9b::/96', '64:ff9b:1::/48', '2002::/16'])],
];

/** A name that resolved only to refused addresses: the connection is not made. */
export class OutboundRefused extends Error {
  readonly code = 'EOUTBOUNDREFUSED';
}

export class OutboundPolicy {
  readonly #allowed: BlockList;

  /** `allow`: addresses and CIDR ranges the server may call although they are inside (config's `outbound.allow`). */
  constructor(allow: readonly string[]) {
    this.#allowed = addressList(allow);
  }

  /** Why the server may not call `address` (an IP): `127.0.0.1 is a loopback address`; undefined when it may. */
  refusal(address: string): string | undefined {
    const type = isIP(address) === 4 ? 'ipv4' : 'ipv6';
    if (this.#allowed.check(address, type)) return undefined;
    const kind = REFUSED.find(([, list]) => list.check(address, type))?.[0];
    return kind && `${address} is ${kind} address`;
  }

  /** Why the server may not call `url` when its host is an IP (a name is checked as it resolves, by `lookup`), or undefined. */
  literalRefusal(url: URL): string | undefined {
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    return isIP(host) ? this.refusal(host) : undefined;
  }

  /**
   * Resolves like dns.lookup, leaving out the addresses the server may not call, and fails when none
   * is left: given to a connection (an http Agent's or request's `lookup`), it is the check at use.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true } as LookupAllOptions, (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => {
      if (err) return callback(err, '');
      const allowed = addresses.filter((a) => this.refusal(a.address) === undefined);
      if (allowed.length === 0) {
        const why = addresses.map((a) => this.refusal(a.address)).join(', ');
        return callback(new OutboundRefused(`${hostname} resolves only to addresses the server does not call (${why}); outbound.allow may list them.`), '');
      }
      if (options.all) return callback(null, allowed);
      return callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}
