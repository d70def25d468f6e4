/**
 * The mails' texts: an eta template per kind in `templates/` (or the owner's file of the same name
 * in `themeDir`), its strings from messages.ts in the mail's language. Each kind has a plain text
 * template (`<kind>.eta`) and an HTML one (`<kind>.html.eta`, framed by `layout.html.eta`); a mail
 * carries both, so a mail program shows the HTML and falls back to the text.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import { overrideFolder } from '../../core/config.ts';
import type { MailLanguage, SubscriptionMailKind } from './contract.ts';
import { fill, MAIL_LANGUAGES, mailText, type MailKey } from './messages.ts';

const here = dirname(fileURLToPath(import.meta.url));

export type MailKind = 'order-receipt' | 'topup-receipt' | 'ticket-reply' | 'verify-email' | 'reset-password' | 'test' | SubscriptionMailKind;

const SUBJECTS: Record<MailKind, MailKey> = {
  'order-receipt': 'order.subject',
  'topup-receipt': 'topup.subject',
  'ticket-reply': 'ticket.subject',
  'verify-email': 'verify.subject',
  'reset-password': 'reset.subject',
  test: 'test.subject',
  'subscription-reminder': 'subscription.reminder.subject',
  'subscription-receipt': 'subscription.receipt.subject',
  'subscription-failed': 'subscription.failed.subject',
};

export function mailLanguage(lang: string): MailLanguage {
  return Object.hasOwn(MAIL_LANGUAGES, lang) ? (lang as MailLanguage) : 'en';
}

export class Templates {
  // The text templates escape nothing; the HTML ones escape what they print with `<%=`.
  readonly #text = new Eta({ autoEscape: false, autoTrim: false, cache: true });
  readonly #html = new Eta({ autoEscape: true, autoTrim: [false, 'nl'], cache: true });
  /** Kinds whose text the owner replaced without an HTML file beside it: their mails go as text alone, in the owner's words. */
  readonly #textOnly = new Set<string>();

  constructor(themeDir: string) {
    const dir = join(here, 'templates');
    const pick = overrideFolder('plugins.email.themeDir', themeDir);
    const owned = (file: string) => pick(file, '') !== '';
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.eta'))) {
      const source = readFileSync(pick(file, join(dir, file)), 'utf8');
      if (file.endsWith('.html.eta')) this.#html.loadTemplate(`@${basename(file, '.html.eta')}`, source);
      else this.#text.loadTemplate(`@${basename(file, '.eta')}`, source);
    }
    for (const kind of Object.keys(SUBJECTS)) if (owned(`${kind}.eta`) && !owned(`${kind}.html.eta`)) this.#textOnly.add(kind);
  }

  /**
   * A message's sentence as HTML: the sentence and its values escaped (once each), the `link` value
   * (an address the server made, never one a player typed) a link.
   */
  #htmlText(lang: MailLanguage, key: MailKey, values: Record<string, string | number>): string {
    const toHtml = this.#html.config.escapeFunction;
    const escaped = Object.fromEntries(
      Object.entries(values).map(([name, value]) => {
        const s = toHtml(value);
        return [name, name === 'link' ? `<a href="${s}">${s}</a>` : s];
      }),
    );
    return fill(toHtml(MAIL_LANGUAGES[lang][key]), escaped);
  }

  /** The subject (filled with `data`'s values: site, id, title), the text and the HTML of a mail. */
  render(kind: MailKind, lang: MailLanguage, data: Record<string, unknown>): { subject: string; text: string; html?: string } {
    const t = (key: MailKey, values?: Record<string, string | number>) => mailText(lang, key, values);
    const subject = t(SUBJECTS[kind], data as Record<string, string | number>);
    const text = `${this.#text
      .render(`@${kind}`, { ...data, t })
      .replace(/\n{3,}/g, '\n\n')
      .trim()}\n`;
    if (this.#textOnly.has(kind)) return { subject, text };
    const h = (key: MailKey, values: Record<string, string | number> = {}) => this.#htmlText(lang, key, values);
    const body = this.#html.render(`@${kind}`, { ...data, t: h });
    const html = this.#html.render('@layout', { ...data, lang, subject, body, t: h });
    return { subject, text, html };
  }
}
