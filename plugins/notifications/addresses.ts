/**
 * Where an endpoint may be: an http(s) address outside the server's own network (core/outbound.ts),
 * and for a Discord announcement, a Discord webhook address: the server posts there only what
 * Discord expects, and a "Discord" endpoint elsewhere would be a second way to any address. An
 * owner's relay in front of Discord is such an address once config's `discordHosts` lists its host.
 */
import { ConfigError } from '../../core/config.ts';
import type { OutboundPolicy } from '../../core/outbound.ts';
import type { EndpointKind } from './contract.ts';

/** The hosts of the addresses Discord's "Copy Webhook URL" gives (its test builds' too; discordapp.com before 2020). */
const DISCORD_HOSTS = new Set(['discord.com', 'discordapp.com', 'ptb.discord.com', 'canary.discord.com']);
/** `/api/webhooks/<id>/<token>`, with or without an API version. */
const DISCORD_PATH = /^\/api\/(v\d+\/)?webhooks\/\d+\/[\w-]+\/?$/;

/** A listed relay: its host name as the URL parser writes it, and its port ('' for the scheme's default). */
interface Relay {
  hostname: string;
  port: string;
}

/**
 * `discordHosts` as config gives it (`relay.example`, `10.0.0.5:8080`, `[::1]:3000`), parsed as a URL's
 * host is, so `Relay.Example` or `0x7f.1` match the address they name; anything more stops boot.
 */
function parseDiscordHosts(entries: readonly string[]): Relay[] {
  return entries.map((entry) => {
    const host = /^[^\s/?#@\\]+$/.test(entry) && !entry.endsWith(':') && URL.canParse(`http://${entry}/`) ? new URL(`http://${entry}/`) : undefined;
    if (!host) {
      throw new ConfigError(
        `Invalid setting plugins.notifications.discordHosts: "${entry}" is not a host name with an optional port (relay.example or relay.example:8080).`,
      );
    }
    // Written with :80 the parser drops the port, as it is http's default; the owner meant that port.
    return { hostname: host.hostname, port: host.port || (/:0*80$/.test(entry) ? '80' : '') };
  });
}

/** `target`'s port as `relay` is matched on: as written when the relay names none (only the scheme's default matches), else the one connected to. */
function portOf(target: URL, relay: Relay): string {
  if (relay.port === '') return target.port;
  return target.port || (target.protocol === 'https:' ? '443' : '80');
}

export class EndpointAddresses {
  readonly outbound: OutboundPolicy;
  readonly #relays: Relay[];

  /** `discordHosts`: the owner's relays a Discord announcement may also go to (config's `plugins.notifications.discordHosts`). */
  constructor(outbound: OutboundPolicy, discordHosts: readonly string[] = []) {
    this.outbound = outbound;
    this.#relays = parseDiscordHosts(discordHosts);
  }

  /** Why an endpoint of `kind` may not be at `url`, starting with the field's name; undefined when it may. */
  problem(kind: EndpointKind, url: string): string | undefined {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return 'url: an http or https address is needed.';
    }
    if (target.protocol !== 'https:' && target.protocol !== 'http:') return 'url: an http or https address is needed.';
    if (kind === 'discord' && !(this.#discordHost(target) && DISCORD_PATH.test(target.pathname))) {
      return (
        'url: a Discord announcement goes to a Discord webhook address (https://discord.com/api/webhooks/<id>/<token>), ' +
        'or to a relay whose host plugins.notifications.discordHosts (config) lists.'
      );
    }
    const refused = this.outbound.literalRefusal(target);
    return refused && `url: ${refused}, which the server does not call unless outbound.allow (config) lists it.`;
  }

  /** Discord's own hosts over https on its port; a listed relay over http or https, the owner's listing being the permission. */
  #discordHost(target: URL): boolean {
    if (DISCORD_HOSTS.has(target.hostname)) return target.protocol === 'https:' && target.port === '';
    return this.#relays.some((r) => r.hostname === target.hostname && r.port === portOf(target, r));
  }
}
