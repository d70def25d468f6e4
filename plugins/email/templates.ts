/**
 * The mails' texts: an eta template per kind in `templates/` (or the owner's file of the same name
 * in `themeDir`), its strings from messages.ts in the mail's language.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import { overrideFolder } from '../../core/config.ts';
import type { MailLanguage } from './contract.ts';
import { MAIL_LANGUAGES, mailText, type MailKey } from './messages.ts';

const here = dirname(fileURLToPath(import.meta.url));

export type MailKind = 'order-receipt' | 'topup-receipt' | 'ticket-reply' | 'verify-email' | 'reset-password' | 'test';

const SUBJECTS: Record<MailKind, MailKey> = {
  'order-receipt': 'order.subject', 'topup-receipt': 'topup.subject', 'ticket-reply': 'ticket.subject',
  'verify-email': 'verify.subject', 'reset-password': 'reset.subject', test: 'test.subject',
};

export function mailLanguage(lang: string): MailLanguage {
  return Object.hasOwn(MAIL_LANGUAGES, lang) ? lang as MailLanguage : 'en';
}

export class Templates {
  // Plain text mails: nothing is HTML-escaped.
  readonly #eta = new Eta({ autoEscape: false, autoTrim: [false, 'nl'], cache: true });

  constructor(themeDir: string) {
    const dir = join(here, 'templates');
    const pick = overrideFolder('plugins.email.themeDir', themeDir);
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.eta'))) {
      this.#eta.loadTemplate(`@${basename(file, '.eta')}`, readFileSync(pick(file, join(dir, file)), 'utf8'));
    }
  }

  /** The subject (filled with `data`'s values: site, id, title) and the text of a mail. */
  render(kind: MailKind, lang: MailLanguage, data: Record<string, unknown>): { subject: string; text: string } {
    const t = (key: MailKey, values?: Record<string, string | number>) => mailText(lang, key, values);
    const subject = t(SUBJECTS[kind], data as Record<string, string | number>);
    const text = this.#eta.render(`@${kind}`, { ...data, t }).replace(/\n{3,}/g, '\n\n').trim();
    return { subject, text: `${text}\n` };
  }
}
