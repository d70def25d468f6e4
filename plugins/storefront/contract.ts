/**
 * The storefront feature's contract: its site settings (the console's site settings form edits
 * them) and the addresses of its pages that mails link to. It renders the other features' services.
 */
import { Type } from '@sinclair/typebox';
import type { SettingValues, SiteSetting } from '../../core/config.ts';
import { createServiceRef } from '../../core/registry.ts';

/**
 * Absolute addresses of storefront pages, made from plugins.storefront.publicUrl. Each is
 * undefined while publicUrl is not set: an address taken from a request's Host header could be
 * forged to send a reset link to someone else's server.
 */
export interface StorefrontService {
  orderPage(orderId: number): string | undefined;
  /** A guest's order, shown to whoever holds the token of its receipt's link (see EmailService.guestOrder). */
  guestOrderPage(token: string): string | undefined;
  ticketPage(ticketId: number): string | undefined;
  resetPasswordPage(token: string): string | undefined;
  verifyEmailPage(token: string): string | undefined;
}

export const storefrontRef = createServiceRef<StorefrontService>('storefront');

const colour = (fallback: string) => Type.String({ pattern: '^#[0-9a-fA-F]{6}$', default: fallback, examples: [fallback] });

export const storefrontSettings = {
  storefrontTitle: {
    schema: Type.String({ minLength: 1, maxLength: 100, default: 'Community Store', examples: ["Steve's Server Store"] }),
    label: 'Storefront title',
    hint: 'In the header, the browser tab and search results.',
  },
  storefrontDescription: {
    schema: Type.String({
      maxLength: 300,
      default: 'Ranks, items and more for our game server.',
      examples: ["Ranks, kits and cosmetics for Steve's survival server."],
    }),
    label: 'Storefront description',
    hint: 'What search engines show under the title of the home page.',
  },
  storefrontLogo: {
    schema: Type.String({
      maxLength: 500,
      pattern: '^(|/[^/\\\\]\\S*|https://[^/\\s]+(/\\S*)?)$',
      default: '',
      examples: ['https://cdn.example.org/logo.png'],
    }),
    label: 'Logo address',
    hint: 'A path on this site or an https:// address; empty shows the title only.',
  },
  storefrontAccent: { schema: colour('#0b4ea2'), label: 'Accent colour', hint: '#rrggbb: the header, links and buttons.' },
  storefrontAccentText: { schema: colour('#ffffff'), label: 'Text on the accent colour', hint: '#rrggbb: keep it readable on the accent.' },
  storefrontFooterLinks: {
    schema: Type.String({ maxLength: 2000, default: '', examples: ['Rules=/rules | Discord=https://discord.gg/example'] }),
    label: 'Footer links',
    hint: 'Label=address pairs separated by " | ", e.g. Rules=https://example.org/rules | Discord=https://discord.gg/abc',
  },
  storefrontServerAddress: {
    schema: Type.String({
      maxLength: 260,
      pattern: '^(|[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?)$',
      default: '',
      examples: ['play.example.org'],
      description: "the game server's address players join at; the home page shows it with the players online (server list ping)",
    }),
    label: 'Game server address',
    hint: 'host or host:port, e.g. play.example.org; empty hides it. The home page shows it with how many play now.',
  },
  storefrontLanguage: {
    schema: Type.Union([Type.Literal('en'), Type.Literal('de')], { default: 'en' }),
    label: 'Storefront default language',
    hint: "Players whose browser asks for none of the storefront's languages see this one.",
  },
} satisfies Record<string, SiteSetting>;

declare module '../../core/config.ts' {
  interface SiteSettings extends SettingValues<typeof storefrontSettings> {}
}
