/**
 * Where an endpoint may be: an http(s) address outside the server's own network (core/outbound.ts),
 * and for a Discord announcement, a Discord webhook address: the server posts there only what
 * Discord expects, and a "Discord" endpoint elsewhere would be a second way to any address.
 */
import type { OutboundPolicy } from '../../core/outbound.ts';
import type { EndpointKind } from './contract.ts';

/** The hosts of the addresses Discord's "Copy Webhook URL" gives (its test builds' too; discordapp.com before 2020). */
const DISCORD_HOSTS = new Set(['discord.com', 'discordapp.com', 'ptb.discord.com', 'canary.discord.com']);
/** `/api/webhooks/<id>/<token>`, with or without an API version. */
const DISCORD_PATH = /^\/api\/(v\d+\/)?webhooks\/\d+\/[\w-]+\/?$/;

/** Why an endpoint of `kind` may not be at `url`, starting with the field's name; undefined when it may. */
export function endpointUrlProblem(kind: EndpointKind, url: string, outbound: OutboundPolicy): string | undefined {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return 'url: an http or https address is needed.';
  }
  if (target.protocol !== 'https:' && target.protocol !== 'http:') return 'url: an http or https address is needed.';
  if (
    kind === 'discord' &&
    (target.protocol !== 'https:' || target.port !== '' || !DISCORD_HOSTS.has(target.hostname) || !DISCORD_PATH.test(target.pathname))
  ) {
    return 'url: a Discord announcement goes to a Discord webhook address (https://discord.com/api/webhooks/<id>/<token>).';
  }
  const refused = outbound.literalRefusal(target);
  return refused && `url: ${refused}, which the server does not call unless outbound.allow (config) lists it.`;
}
