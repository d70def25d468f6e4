/**
 * Mailed account links: a forgotten password's reset (ask for a link, open it, choose a new
 * password) and the email confirmation of a new account. The email feature makes, mails and
 * checks the single-use tokens; these pages only take them. Without it (or without SMTP) they are not found.
 */
import type { EmailService } from '../email/contract.ts';
import type { AuthService } from '../auth/contract.ts';
import { refusal, refused, type PageRouter, type RateLimit } from './router.ts';
import type { Site, Visit } from './site.ts';

export interface RecoveryPeers {
  auth: AuthService;
  email: () => EmailService | undefined;
}

const LOGIN_MAX = 191;

export function recoveryRoutes(pages: PageRouter, site: Site, peers: RecoveryPeers, opts: { mailLimit: RateLimit }): void {
  const { auth } = peers;
  const withEmail =
    (handler: (visit: Visit, email: EmailService, form: Record<string, string>) => Promise<ReturnType<Site['page']>>) =>
    async (visit: Visit, form: Record<string, string>) => {
      const email = peers.email();
      if (!email) return site.message(visit, 404, visit.t('error.notFound'), visit.t('mail.unavailable'));
      return handler(visit, email, form);
    };
  const tokenOf = (visit: Visit) => (visit.request.params as { token: string }).token;
  const forgotPage = (visit: Visit, values: Record<string, string>, errors: Record<string, string> = {}, status = 200) =>
    site.page(visit, 'forgot', { title: visit.t('forgot.title'), status }, { values, errors });
  const resetPage = (visit: Visit, errors: Record<string, string> = {}, status = 200) =>
    site.page(
      visit,
      'reset',
      { title: visit.t('reset.title'), status },
      {
        token: tokenOf(visit),
        errors,
        passwordMin: auth.passwordLength.min,
        passwordMax: auth.passwordLength.max,
      },
    );
  const login = (form: Record<string, string>) => (form.login ?? '').trim().slice(0, LOGIN_MAX);

  pages.get(
    '/password/forgot',
    withEmail(async (visit) => forgotPage(visit, {})),
  );

  pages.post(
    '/password/forgot',
    withEmail(async (visit, email, form) => {
      const values = { login: login(form) };
      if (!values.login) return forgotPage(visit, values, { login: visit.t('error.required') }, 422);
      await email.countMailLink(visit.request, values.login);
      await email.requestPasswordReset(values.login, visit.lang);
      return site.message(visit, 200, visit.t('forgot.sentTitle'), visit.t('forgot.sent'));
    }),
    { limit: { name: 'mail-link', rate: opts.mailLimit } },
  );

  pages.get(
    '/password/reset/:token',
    withEmail(async (visit, email) =>
      (await email.resetTokenLive(tokenOf(visit))) ? resetPage(visit) : site.message(visit, 400, visit.t('reset.title'), visit.t('reset.invalid')),
    ),
  );

  pages.post(
    '/password/reset/:token',
    withEmail(async (visit, email, form) => {
      try {
        await email.resetPassword(tokenOf(visit), form.password ?? '');
      } catch (err) {
        if (!refused(err)) throw err;
        if (err.code === 'INVALID_PASSWORD') return resetPage(visit, { password: refusal(visit, err, auth.passwordLength) }, 422);
        return site.message(visit, 400, visit.t('reset.title'), visit.t('reset.invalid'));
      }
      return site.redirect(visit, site.u('/login'), visit.t('reset.done'));
    }),
  );

  pages.get(
    '/verify/:token',
    withEmail(async (visit, email) => {
      try {
        await email.verifyEmail(tokenOf(visit));
      } catch (err) {
        if (!refused(err)) throw err;
        return site.message(visit, 400, visit.t('verify.title'), visit.t('verify.invalid'));
      }
      return site.redirect(visit, site.u('/login'), visit.t('verify.done'));
    }),
  );

  pages.post(
    '/verify/resend',
    withEmail(async (visit, email, form) => {
      const name = login(form);
      if (name) {
        await email.countMailLink(visit.request, name);
        await email.resendVerification(name, visit.lang);
      }
      return site.message(visit, 200, visit.t('forgot.sentTitle'), visit.t('verify.resent'));
    }),
    { limit: { name: 'mail-link', rate: opts.mailLimit } },
  );
}
