/**
 * The email section of the staff console: whether SMTP is set (and what it is), a test message,
 * and the recent messages with their state, attempts and last error, each of which can be sent again.
 */
import { Type } from '@sinclair/typebox';
import { field, idOf, type ConsolePage, type ConsoleSection } from '../../core/console.ts';
import type { OutboxRow } from './outbox.ts';
import type { DbEmailService } from './service.ts';

interface Options {
  smtp: { host: string; port: number; secure: boolean; user: string; passwordEnv: string; from: string };
  requireVerification: boolean;
  recentShown: number;
}

/** Sent (when), retrying (when next: UTC, as the console's times), or as stored. */
const stateOf = (m: OutboxRow) => {
  if (m.state === 'sent') return `sent ${m.sentAt!.slice(0, 16)}`;
  return m.state === 'queued' && m.attempts > 0 ? `retrying at ${new Date(m.dueAt).toISOString().slice(11, 19)}` : m.state;
};

const TestBody = Type.Object({ to: Type.String({ format: 'email', maxLength: 191 }) });

export const emailSection: ConsoleSection<Options, DbEmailService> = {
  id: 'email',
  title: 'Email',
  order: 85,
  pages(pages, { options: opts, env }, email) {
    const { smtp } = opts;
    const overview = async (test?: { values: Record<string, string>; errors: Record<string, string> }): Promise<ConsolePage> => {
      if (!email.configured) {
        return {
          title: 'Email',
          blocks: [
            {
              kind: 'text',
              heading: 'Email is off',
              text:
                'No SMTP server is set, so no mail is queued or sent: no receipts, no ticket answers, no password reset or verification links. ' +
                'Set plugins.email.smtp.host and plugins.email.smtp.from in the configuration (the password goes in the environment ' +
                'variable named by plugins.email.smtp.passwordEnv) and restart.',
            },
          ],
        };
      }
      const rows = await email.outbox.recent(opts.recentShown);
      return {
        title: 'Email',
        status: test ? 422 : 200,
        blocks: [
          {
            kind: 'stats',
            heading: 'SMTP',
            items: [
              { label: 'server', value: `${smtp.host}:${smtp.port}${smtp.secure ? ' (TLS)' : ''}` },
              { label: 'sender', value: smtp.from },
              { label: 'sign-in', value: smtp.user ? `${smtp.user}, password ${env[smtp.passwordEnv] ? 'set' : `missing (${smtp.passwordEnv})`}` : 'none' },
              { label: 'verification at registration', value: email.verificationRequired ? 'required' : 'off' },
            ],
          },
          {
            kind: 'form',
            id: 'email-test',
            title: 'Send a test message',
            action: `${pages.base}/test`,
            submit: 'Send test message',
            values: test?.values,
            errors: test?.errors,
            fields: [{ name: 'to', label: 'To', required: true, autocomplete: 'email' }],
          },
          {
            kind: 'table',
            caption: 'Recent messages',
            empty: 'No message yet.',
            columns: [
              { key: 'id', label: 'ID', numeric: true },
              { key: 'created', label: 'Queued' },
              { key: 'kind', label: 'Kind' },
              { key: 'to', label: 'To' },
              { key: 'subject', label: 'Subject' },
              { key: 'state', label: 'State' },
              { key: 'attempts', label: 'Attempts', numeric: true },
              { key: 'error', label: 'Last error' },
              { key: 'again', label: 'Send again' },
            ],
            rows: rows.map((m) => ({
              id: String(m.id),
              created: m.createdAt.slice(0, 16),
              kind: m.kind,
              to: m.recipient,
              subject: m.subject ?? '',
              state: stateOf(m),
              attempts: String(m.attempts),
              error: m.lastError ?? '',
              again: { action: `${pages.base}/${m.id}/again`, label: `Send message ${m.id} again` },
            })),
          },
        ],
      };
    };

    pages.get('', async () => overview());

    pages.post(
      '/test',
      async ({ body, invalid, form }) => {
        if (!email.configured) return overview();
        if (invalid) return overview({ values: form, errors: { to: 'Enter an email address.' } });
        const id = await email.queueTest((body as { to: string }).to);
        return { redirect: pages.base, notice: `Test message ${id} queued for ${field(form, 'to')}.` };
      },
      { body: TestBody },
    );

    pages.post('/:id/again', async ({ params }) => {
      const id = email.configured ? await email.sendAgain(idOf(params.id)) : undefined;
      if (id === undefined) return { redirect: pages.base, notice: 'There is no such message.' };
      return { redirect: pages.base, notice: `Message ${params.id} queued again as ${id}.` };
    });
  },
};
