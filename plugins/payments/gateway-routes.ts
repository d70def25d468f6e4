/** Stripe's and PayPal's credentials in the admin API, as the console sets them: read (secrets never whole), change, check. */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import * as S from '../../core/schemas.ts';
import { GATEWAY_FIELDS, type GatewayName, type GatewaySettings } from './gateway-settings.ts';
import { checkCredentials } from './live-gateways.ts';

const Field = Type.Object({
  value: Type.Optional(Type.String({ description: 'only for a field that is not secret' })),
  set: Type.Boolean(),
  ending: Type.Optional(Type.String({ description: "a secret's last 4 characters when it is longer than 8; never the whole", examples: ['4f2a'] })),
  source: Type.Union([Type.Literal('config'), Type.Literal('environment'), Type.Literal('console')], {
    description: 'config (the configuration file) and environment win and cannot be changed here',
  }),
});

const bodyOf = (gateway: GatewayName) =>
  Type.Object(
    Object.fromEntries(
      GATEWAY_FIELDS[gateway].map((f) => [
        f.name,
        Type.Optional(
          Type.String({ maxLength: f.name === 'apiBase' ? 200 : 512, description: 'empty or left out: the stored value stays', writeOnly: f.secret }),
        ),
      ]),
    ),
    { additionalProperties: false },
  );

export const GatewayBodies = { stripe: bodyOf('stripe'), paypal: bodyOf('paypal') };

export function gatewaySettingsRoutes(fastify: FastifyInstance, credentials: GatewaySettings, timeoutMs: number): void {
  const app = fastify.withTypeProvider<S.TypeBoxProvider>();
  for (const gateway of ['stripe', 'paypal'] as const) {
    const response = { 200: S.ok({ data: Type.Record(Type.String(), Field) }) };
    app.get(
      `/api/admin/payments/gateways/${gateway}/settings`,
      { schema: { tags: ['payments'], summary: `The ${gateway} credentials in use`, response } },
      async () => ({ status: true as const, data: credentials.view(gateway) }),
    );
    app.patch(
      `/api/admin/payments/gateways/${gateway}/settings`,
      {
        schema: {
          tags: ['payments'],
          summary: `Change the ${gateway} credentials`,
          description: 'Used on every instance without a restart. Fields set in the environment or the configuration file are refused.',
          body: GatewayBodies[gateway],
          response,
          errors: ['VALIDATION_ERROR', 'SERVICE_UNAVAILABLE'],
        },
      },
      async (request) => ({ status: true as const, data: await credentials.update(gateway, request.body as Record<string, string>) }),
    );
    app.post(
      `/api/admin/payments/gateways/${gateway}/check`,
      {
        schema: {
          tags: ['payments'],
          summary: `Ask ${gateway} whether the credentials in use are taken`,
          response: { 200: S.ok() },
          errors: ['GATEWAY_UNAVAILABLE', 'GATEWAY_ERROR'],
        },
      },
      async () => {
        await checkCredentials(gateway, credentials, timeoutMs);
        return { status: true as const };
      },
    );
  }
}
