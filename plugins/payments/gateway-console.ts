/**
 * The console's Gateways section: Stripe's and PayPal's credentials, each field shown with where
 * it comes from (a secret only as set and its last 4 characters), a form for the ones the console
 * may set, and a check of the credentials in use against the gateway's API.
 */
import { errorsFor, type ConsoleBlock, type ConsolePage, type ConsoleSection, type ShownForm } from '../../core/console.ts';
import { GATEWAY_FIELDS, type GatewayName, type GatewaySettings } from './gateway-settings.ts';
import { GatewayBodies } from './gateway-routes.ts';
import { checkCredentials } from './live-gateways.ts';
import type { DbPaymentsService } from './service.ts';

/** The credentials of each payments service, set by the feature's register (the console gets the service only). */
export const credentialsOf = new WeakMap<object, { credentials: GatewaySettings; timeoutMs: number }>();

const TITLES: Record<GatewayName, string> = { stripe: 'Stripe', paypal: 'PayPal' };
const WHERE = { config: ' (configuration file)', environment: ' (environment)', console: '' };

function gatewayBlocks(gateway: GatewayName, credentials: GatewaySettings, base: string, shown?: { form: string } & ShownForm): ConsoleBlock[] {
  const view = credentials.view(gateway);
  const specs = GATEWAY_FIELDS[gateway];
  const missing = credentials.missing(gateway);
  const stats: ConsoleBlock = {
    kind: 'stats',
    heading: TITLES[gateway],
    items: [
      { label: 'state', value: missing.length ? `off: ${missing.join(', ')} not set` : 'on' },
      ...specs.map((spec) => {
        const f = view[spec.name]!;
        const text = spec.secret ? (f.set ? (f.ending ? `set (ends in ${f.ending})` : 'set') : 'not set') : f.value || 'not set';
        return { label: spec.label, value: `${text}${WHERE[f.source]}${f.source === 'environment' ? `: ${spec.env}` : ''}` };
      }),
    ],
  };
  const fields = specs
    .filter((spec) => view[spec.name]!.source === 'console')
    .map((spec) => ({
      name: spec.name,
      label: `${TITLES[gateway]} ${spec.label.toLowerCase()}`,
      ...(spec.secret ? { type: 'password' as const, hint: view[spec.name]!.set ? 'Set: leave empty to keep it.' : 'Stored encrypted.' } : {}),
      autocomplete: 'off',
    }));
  const mine = shown?.form === gateway ? shown : undefined;
  const blocks: ConsoleBlock[] = [stats];
  if (fields.length) {
    const values = Object.fromEntries(specs.filter((s) => !s.secret).map((s) => [s.name, view[s.name]!.value ?? '']));
    blocks.push({
      kind: 'form',
      id: `gateway-${gateway}`,
      title: `${TITLES[gateway]} credentials`,
      action: `${base}/${gateway}`,
      submit: `Save ${TITLES[gateway]} credentials`,
      values: mine?.values ?? values,
      errors: mine?.errors,
      fields,
    });
  }
  blocks.push({
    kind: 'form',
    id: `gateway-${gateway}-check`,
    title: `Check the ${TITLES[gateway]} credentials`,
    action: `${base}/${gateway}/check`,
    submit: `Check with ${TITLES[gateway]}`,
    errors: shown?.form === `${gateway}-check` ? shown.errors : undefined,
    fields: [],
  });
  return blocks;
}

export const gatewaysSection: ConsoleSection<unknown, DbPaymentsService> = {
  id: 'gateways',
  title: 'Gateways',
  order: 67,
  pages(pages, _ctx, payments) {
    const { credentials, timeoutMs } = credentialsOf.get(payments)!;
    const page = async (shown?: { form: string } & ShownForm): Promise<ConsolePage> => ({
      title: 'Payment gateways',
      status: shown ? 422 : 200,
      blocks: [
        {
          kind: 'text',
          text: 'Credentials set here are stored encrypted and used by every server at once. Environment variables and the configuration file win where they are set.',
        },
        ...gatewayBlocks('stripe', credentials, pages.base, shown),
        ...gatewayBlocks('paypal', credentials, pages.base, shown),
      ],
    });

    pages.get('', async () => page());
    for (const gateway of ['stripe', 'paypal'] as const) {
      pages.post(
        `/${gateway}`,
        async ({ body, invalid, form }) => {
          const values = Object.fromEntries(Object.entries(form).filter(([k]) => !GATEWAY_FIELDS[gateway].find((s) => s.name === k)?.secret));
          if (invalid) return page({ form: gateway, values, errors: invalid });
          try {
            await credentials.update(gateway, body as Record<string, string>);
          } catch (err) {
            return page({
              form: gateway,
              values,
              errors: errorsFor(
                err,
                GATEWAY_FIELDS[gateway].map((s) => s.name),
              ),
            });
          }
          return { redirect: pages.base, notice: `${TITLES[gateway]} credentials saved.` };
        },
        { body: GatewayBodies[gateway] },
      );
      pages.post(`/${gateway}/check`, async () => {
        try {
          await checkCredentials(gateway, credentials, timeoutMs);
        } catch (err) {
          return page({ form: `${gateway}-check`, values: {}, errors: errorsFor(err, []) });
        }
        return { redirect: pages.base, notice: `${TITLES[gateway]} took the credentials.` };
      });
    }
  },
};
