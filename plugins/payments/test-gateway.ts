/**
 * Test mode: the built-in `test` gateway, offered at checkout only while the site setting testMode
 * is on. Its checkout page is in the console, so only staff can pay or fail it: a paid one completes
 * as a verified webhook would, its order a test order (delivered, marked, left out of revenue, the
 * goal and the donation boards, and cleared on request). See docs/payments.md#test-mode.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { SettingValues, SiteSetting } from '../../core/config.ts';
import type { ConsolePages } from '../../core/console.ts';
import { DomainError } from '../../core/errors.ts';
import { counted, formatMoney } from '../../core/format.ts';
import * as S from '../../core/schemas.ts';
import type { GatewayAdapter } from './contract.ts';
import type { Payment } from './model.ts';
import type { DbPaymentsService } from './service.ts';

export const TEST_GATEWAY = 'test';

export const testModeSettings = {
  testMode: {
    schema: Type.Boolean({ default: false, description: 'offer the test gateway at checkout, whose purchases are test orders' }),
    label: 'Test mode',
    hint: 'Offers the test gateway at checkout; staff pay or fail its checkout in the console. Its orders are delivered but marked test and left out of revenue, goals and boards.',
  },
} satisfies Record<string, SiteSetting>;

declare module '../../core/config.ts' {
  interface SiteSettings extends SettingValues<typeof testModeSettings> {}
}

/** The test gateway: no money moves, no webhooks come; the console's checkout page stands in for both. */
export function testGateway(): GatewayAdapter {
  return {
    name: TEST_GATEWAY,
    test: true,
    async createCheckout(request) {
      const back = new URLSearchParams({ return: request.returnURL, cancel: request.cancelURL });
      return { checkoutRef: `test-${request.paymentId}`, checkoutURL: `/console/payments/test-checkout/${request.paymentId}?${back}` };
    },
    async parseWebhook() {
      throw new DomainError('INVALID_SIGNATURE', 'The test gateway sends no webhooks: its payments are paid on its checkout page in the console.');
    },
    // Nothing was paid, so there is nothing to give back.
    async refund() {},
  };
}

/** Where the buyer goes after the test checkout: the addresses its start was given, kept in the stored checkout address. */
function onward(payment: Payment, which: 'return' | 'cancel'): string {
  return new URL(payment.checkoutUrl, 'http://localhost').searchParams.get(which) ?? '/';
}

/** The test checkout in the console (admins only, as the section): the payment, and a button to pay it or to fail it. */
export function testCheckoutPages(pages: ConsolePages, payments: DbPaymentsService): void {
  pages.get('/test-checkout/:id', async ({ params }) => {
    const payment = await payments.requireTestPayment(params.id ?? '');
    const buyer = payment.userId === 0 ? `guest ${payment.guestName ?? ''}` : `account ${payment.userId}`;
    const open = payment.status === 'pending' || payment.status === 'expired';
    return {
      title: 'Test checkout',
      blocks: [
        { kind: 'text', text: 'Test mode: no money moves. Pay completes the purchase as a real payment would (its commands are delivered), as a test order.' },
        {
          kind: 'stats',
          items: [
            { label: 'amount', value: `${formatMoney(payment.amount)} ${payment.currency}` },
            { label: 'buyer', value: buyer },
            { label: 'status', value: payment.status },
          ],
        },
        ...(open
          ? [
              {
                kind: 'form' as const,
                id: 'test-pay',
                title: 'Pay',
                action: `${pages.base}/test-checkout/${payment.id}/pay`,
                submit: 'Pay (test)',
                fields: [],
              },
              {
                kind: 'form' as const,
                id: 'test-fail',
                title: 'Fail',
                action: `${pages.base}/test-checkout/${payment.id}/fail`,
                submit: 'Fail the payment',
                fields: [],
              },
            ]
          : [{ kind: 'links' as const, items: [{ label: 'Back to the store', href: onward(payment, 'return') }] }]),
      ],
    };
  });

  pages.post('/test-checkout/:id/pay', async ({ params }) => {
    const { payment, result } = await payments.payTest(params.id ?? '');
    return { redirect: onward(payment, 'return'), notice: `Test payment ${result}.` };
  });

  // A declined card: the buyer is sent back, the payment stays pending until it expires, as at a real gateway.
  pages.post('/test-checkout/:id/fail', async ({ params }) => {
    const payment = await payments.requireTestPayment(params.id ?? '');
    return { redirect: onward(payment, 'cancel'), notice: 'Test payment failed.' };
  });

  pages.post('/test-orders/clear', async () => {
    const { orders, payments: cleared } = await payments.clearTests();
    return { redirect: pages.base, notice: `Cleared ${counted(orders, 'test order')} and ${counted(cleared, 'test payment')}.` };
  });
}

/** The admin API's clearing of test orders, as the console's button. */
export function testModeRoutes(fastify: FastifyInstance, payments: DbPaymentsService): void {
  fastify.withTypeProvider<S.TypeBoxProvider>().delete(
    '/api/admin/payments/test-orders',
    {
      schema: {
        tags: ['payments'],
        summary: 'Delete every test order and test payment',
        description: 'Test orders were paid at the test gateway (site setting testMode); real orders are never touched.',
        response: {
          200: S.ok({
            data: Type.Object({
              orders: Type.Integer({ description: 'test orders deleted', examples: [3] }),
              payments: Type.Integer({ description: 'test payments deleted (paid or not)', examples: [4] }),
            }),
          }),
        },
      },
    },
    async () => ({ status: true as const, data: await payments.clearTests() }),
  );
}
