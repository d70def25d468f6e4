/**
 * The email section of the staff console: whether SMTP is set (and what it is), a test message,
 * and the recent messages with their state, attempts and last error, each of which can be sent again.
 */
import { Type } from '@sinclair/typebox';
import { errorsFor, field, idOf, type ConsoleBlock, type ConsolePage, type ConsoleSection, type ShownForm } from '../../core/console.ts';
import { toBool } from '../../core/schemas.ts';
import type { OutboxRow } from './outbox.ts';
import type { DbEmailService } from './service.ts';
import { SmtpBody } from './smtp-routes.ts';
import { SMTP_FIELDS, type SmtpPatch, type SmtpSettings } from './smtp-settings.ts';

interface Options {
  smtp: { passwordEnv: string };
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
  pages(pages, { options: opts }, email) {
    const smtp = email.smtp;
    type Shown = { form: 'test' | 'smtp' | 'smtp-test' } & ShownForm;
    const overview = async (shown?: Shown): Promise<ConsolePage> => {
      const on = email.configured;
      const blocks: ConsoleBlock[] = [
        ...smtpBlocks(smtp, pages.base, opts.smtp.passwordEnv, shown?.form === 'smtp' ? shown : undefined),
        {
          kind: 'form',
          id: 'email-smtp-test',
          title: 'Send a test now',
          action: `${pages.base}/smtp/test`,
          submit: 'Send a test message to my address',
          errors: shown?.form === 'smtp-test' ? shown.errors : undefined,
          fields: [],
        },
      ];
      if (!on) {
        return {
          title: 'Email',
          status: shown ? 422 : 200,
          blocks: [
            {
              kind: 'text',
              heading: 'Email is off',
              text:
                'No SMTP server is set, so no mail is queued or sent: no receipts, no ticket answers, no password reset or verification links. ' +
                'Set the server and the sender below (or plugins.email.smtp in the configuration file).',
            },
            ...blocks,
          ],
        };
      }
      const rows = await email.outbox.recent(opts.recentShown);
      const test = shown?.form === 'test' ? shown : undefined;
      return {
        title: 'Email',
        status: shown ? 422 : 200,
        blocks: [
          {
            kind: 'stats',
            heading: 'SMTP',
            items: [{ label: 'verification at registration', value: email.verificationRequired ? 'required' : 'off' }],
          },
          ...blocks,
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
        if (invalid) return overview({ form: 'test', values: form, errors: { to: 'Enter an email address.' } });
        const id = await email.queueTest((body as { to: string }).to);
        return { redirect: pages.base, notice: `Test message ${id} queued for ${field(form, 'to')}.` };
      },
      { body: TestBody },
    );

    pages.post(
      '/smtp',
      async ({ body, invalid, form }) => {
        const values = { ...form, secure: toBool(form.secure) ? 'true' : 'false', password: '' };
        if (invalid) return overview({ form: 'smtp', values, errors: invalid });
        const patch = { ...(body as SmtpPatch) };
        if (!smtp.fromConfig) patch.secure = toBool(form.secure);
        for (const f of ['host', 'user', 'from'] as const) if (!smtp.fromConfig) patch[f] = field(form, f);
        try {
          await smtp.update(patch);
        } catch (err) {
          return overview({ form: 'smtp', values, errors: errorsFor(err, [...SMTP_FIELDS, 'password']) });
        }
        return { redirect: pages.base, notice: 'SMTP settings saved.' };
      },
      { body: SmtpBody },
    );

    pages.post('/smtp/test', async ({ staff }) => {
      const to = await email.addressOf(staff.userId);
      if (!to) return overview({ form: 'smtp-test', values: {}, errors: { _form: 'Your account has no email address: add one to your account first.' } });
      try {
        await smtp.sendNow(await email.testMail(to));
      } catch (err) {
        return overview({ form: 'smtp-test', values: {}, errors: errorsFor(err, []) });
      }
      return { redirect: pages.base, notice: `A test message went to ${to}: the SMTP server took it.` };
    });

    pages.post('/:id/again', async ({ params }) => {
      const id = email.configured ? await email.sendAgain(idOf(params.id)) : undefined;
      if (id === undefined) return { redirect: pages.base, notice: 'There is no such message.' };
      return { redirect: pages.base, notice: `Message ${params.id} queued again as ${id}.` };
    });
  },
};

/** What the console shows of the SMTP server: where each field comes from, and a form for the ones staff may set. */
function smtpBlocks(smtp: SmtpSettings, base: string, passwordEnv: string, shown?: ShownForm): ConsoleBlock[] {
  const v = smtp.view();
  const password = v.passwordSet ? (v.passwordEnding ? `set (ends in ${v.passwordEnding})` : 'set') : 'none';
  const from = (what: string) => (v.sources.host === 'config' ? `${what} (configuration file)` : what);
  const stats: ConsoleBlock = {
    kind: 'stats',
    heading: 'SMTP server',
    items: [
      { label: 'server', value: v.host ? from(`${v.host}:${v.port}${v.secure ? ' (TLS)' : ''}`) : 'none' },
      { label: 'sender', value: v.from ? from(v.from) : 'none' },
      { label: 'sign-in', value: v.user ? from(v.user) : 'none' },
      { label: 'password', value: v.sources.password === 'environment' ? `${password} (environment variable ${passwordEnv})` : password },
    ],
  };
  const fields = [
    ...(smtp.fromConfig
      ? []
      : [
          { name: 'host', label: 'SMTP server', hint: 'Its host name, e.g. smtp.example.org; empty: no mail is sent.', autocomplete: 'off' },
          { name: 'port', label: 'Port', type: 'number' as const, hint: '587 with STARTTLS, 465 with TLS.' },
          { name: 'secure', label: 'TLS from the first byte (port 465)', type: 'checkbox' as const },
          { name: 'user', label: 'Sign-in user', hint: 'Empty: the server needs no sign-in.', autocomplete: 'off' },
        ]),
    ...(v.sources.password === 'environment'
      ? []
      : [
          {
            name: 'password',
            label: 'Password',
            type: 'password' as const,
            hint: v.passwordSet ? `Set (${password}): leave empty to keep it.` : 'Stored encrypted.',
            autocomplete: 'new-password',
          },
        ]),
    ...(smtp.fromConfig ? [] : [{ name: 'from', label: 'Sender', hint: 'Name and address, e.g. Store <store@example.org>.', autocomplete: 'off' }]),
  ];
  if (fields.length === 0) return [stats];
  const values = { host: v.host, port: String(v.port), secure: String(v.secure), user: v.user, from: v.from, password: '' };
  const form: ConsoleBlock = {
    kind: 'form',
    id: 'email-smtp',
    title: smtp.fromConfig ? 'SMTP password (the server is set in the configuration file)' : 'SMTP server settings',
    action: `${base}/smtp`,
    submit: 'Save SMTP settings',
    values: shown?.values ?? values,
    errors: shown?.errors,
    fields,
  };
  return [stats, form];
}
