/** HTTP of the payments feature: admin packages and debts, the checkout, a payment's state, gateway webhooks. */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { displayTimestamp, formatMoney } from '../../core/format.ts';
import * as S from '../../core/schemas.ts';
import type { SettingsService } from '../../core/settings.ts';
import { disputeRoutes } from './dispute-routes.ts';
import {
  CheckoutBody,
  CheckoutResponse,
  PackageCreateBody,
  PackageParams,
  PackagePatchBody,
  PackageRow,
  PaymentParams,
  PaymentRow,
  PurchaseBody,
  PurchaseResponse,
  WebhookParams,
  WebhookResponse,
} from './schemas.ts';
import type { DbPaymentsService, Package, Payment } from './service.ts';

const tags = ['payments'];

/** Gateways sign what they send; their bodies are small. */
const WEBHOOK_BODY_LIMIT = 256 * 1024;

export async function paymentsRoutes(fastify: FastifyInstance, payments: DbPaymentsService, settings: SettingsService): Promise<void> {
  const tz = () => settings.get().timezone;
  adminRoutes(fastify, payments, tz);
  playerRoutes(fastify, payments, tz);
  disputeRoutes(fastify, payments, tz);
  await webhookRoutes(fastify, payments);
}

function showPackage(p: Package, tz: string) {
  return {
    id: String(p.id),
    name: p.name,
    price: formatMoney(p.price),
    currency: p.currency,
    credits: formatMoney(p.credits),
    bonus: formatMoney(p.bonus),
    creationDate: displayTimestamp(p.creationDate, tz),
  };
}

function showPayment(p: Payment, tz: string) {
  return {
    paymentID: p.id,
    kind: p.purchaseLines === null ? 'top-up' : 'purchase',
    userID: String(p.userId),
    guestName: p.guestName,
    guestEmail: p.guestEmail,
    gateway: p.gateway,
    status: p.status,
    amount: formatMoney(p.amount),
    currency: p.currency,
    credits: formatMoney(p.credits),
    bonus: formatMoney(p.bonus),
    packageID: p.packageId === null ? null : String(p.packageId),
    orderID: p.orderId === null ? null : String(p.orderId),
    checkoutURL: p.checkoutUrl,
    reclaimed: formatMoney(p.reclaimed),
    debt: formatMoney(p.debt),
    creationDate: displayTimestamp(p.creationDate, tz),
    updateDate: displayTimestamp(p.updateDate, tz),
  };
}

/** Admin: top-up packages, and the debts refunds and disputes left. */
function adminRoutes(fastify: FastifyInstance, payments: DbPaymentsService, tz: () => string): void {
  const app = fastify.withTypeProvider<S.TypeBoxProvider>();
  app.get(
    '/api/admin/payments/packages',
    {
      schema: { tags, summary: 'Top-up packages', response: { 200: Type.Array(PackageRow) } },
    },
    async () => (await payments.packages()).map((p) => showPackage(p, tz())),
  );
  app.post(
    '/api/admin/payments/packages',
    {
      schema: {
        tags,
        summary: 'Create a top-up package',
        body: PackageCreateBody,
        response: { 201: PackageRow },
        errors: ['INVALID_AMOUNT', 'INVALID_CURRENCY'],
      },
    },
    async (request, reply) => reply.code(201).send(showPackage(await payments.createPackage(request.body), tz())),
  );
  app.get(
    '/api/admin/payments/packages/:id',
    {
      schema: { tags, summary: 'A top-up package', params: PackageParams, response: { 200: PackageRow }, errors: ['PACKAGE_NOT_FOUND'] },
    },
    async (request) => showPackage(await payments.requirePackage(Number(request.params.id)), tz()),
  );
  app.patch(
    '/api/admin/payments/packages/:id',
    {
      schema: {
        tags,
        summary: 'Change a top-up package',
        params: PackageParams,
        body: PackagePatchBody,
        response: { 200: PackageRow },
        errors: ['PACKAGE_NOT_FOUND', 'INVALID_AMOUNT', 'INVALID_CURRENCY'],
      },
    },
    async (request) => showPackage(await payments.updatePackage(Number(request.params.id), request.body), tz()),
  );
  app.delete(
    '/api/admin/payments/packages/:id',
    {
      schema: {
        tags,
        summary: 'Delete a top-up package (payments made keep their amounts)',
        params: PackageParams,
        response: { 200: S.ok() },
        errors: ['PACKAGE_NOT_FOUND'],
      },
    },
    async (request) => {
      await payments.deletePackage(Number(request.params.id));
      return { status: true as const };
    },
  );
  app.get(
    '/api/admin/payments/debts',
    {
      schema: {
        tags,
        summary: 'Refunded or disputed payments whose credits were partly spent',
        description: '`debt` is what could not be taken back: balances never go negative.',
        response: { 200: Type.Array(PaymentRow) },
      },
    },
    async () => (await payments.debts()).map((p) => showPayment(p, tz())),
  );
}

/** The player's side: a top-up's checkout, the packages on offer, a direct purchase, a payment's state. */
function playerRoutes(fastify: FastifyInstance, payments: DbPaymentsService, tz: () => string): void {
  const app = fastify.withTypeProvider<S.TypeBoxProvider>();
  app.post(
    '/api/payments/checkout',
    {
      // The gateway is called out to: no transaction may be held meanwhile.
      config: { idempotent: 'own-commit' },
      schema: {
        tags,
        summary: 'Start a payment at a gateway',
        description: '`userID` or `username`; `amount` (site currency, credited 1:1) or `packageID`. Send the player to `checkoutURL`.',
        body: CheckoutBody,
        response: { 200: CheckoutResponse },
        errors: [
          'GATEWAY_UNAVAILABLE',
          'INVALID_URL',
          'USER_NOT_FOUND',
          'PACKAGE_NOT_FOUND',
          'INVALID_AMOUNT',
          'PURCHASES_BLOCKED',
          'SPENDING_LIMIT',
          'GATEWAY_ERROR',
        ],
      },
    },
    async (request) => {
      const payment = await payments.checkout({ ...request.body, ip: request.ip, headers: request.headers });
      return { status: true as const, data: { paymentID: payment.id, checkoutURL: payment.checkoutUrl } };
    },
  );
  app.get(
    '/api/payments/packages',
    {
      schema: { tags, summary: 'Top-up packages on offer, cheapest first', response: { 200: Type.Array(PackageRow) } },
    },
    async () => (await payments.packages()).map((p) => showPackage(p, tz())),
  );
  app.post(
    '/api/payments/purchase',
    {
      config: { idempotent: 'own-commit' },
      schema: {
        tags,
        summary: 'Buy a basket directly at a gateway',
        description:
          'The buyer is `userID`, `username` or, for a guest, `guestName`. Prices come from the catalogue; the basket is checked as a buy is. ' +
          "Send the player to `checkoutURL`; the gateway's webhook completes the order. `coupon` and `giftCard` are priced now and taken " +
          "when the payment completes; if another buyer took the coupon's last use or the card's balance meanwhile, the paid purchase is settled " +
          'as one that can no longer be made (docs/payments.md). A basket a gift card pays in full is bought from the balance instead (INVALID_AMOUNT here).',
        body: PurchaseBody,
        response: { 200: PurchaseResponse },
        errors: [
          'GATEWAY_UNAVAILABLE',
          'INVALID_URL',
          'USER_NOT_FOUND',
          'GUEST_CHECKOUT_DISABLED',
          'INVALID_GUEST_NAME',
          'INVALID_GUEST_EMAIL',
          'PRODUCT_NOT_FOUND',
          'INVALID_QUANTITY',
          'INVALID_VARIABLE',
          'OUT_OF_STOCK',
          'REQUIRED_PRODUCT',
          'REQUIRED_LINKED_ACCOUNT',
          'DOWNGRADE_NOT_ALLOWED',
          'ACCOUNT_REQUIRED',
          'INVALID_AMOUNT',
          'GATEWAY_ERROR',
          'PROMOTION_INVALID',
          'PURCHASES_BLOCKED',
          'SPENDING_LIMIT',
          'RATE_LIMITED',
        ],
      },
    },
    async (request) => {
      const { gateway, userID, username, guestName, guestEmail, lines, returnURL, cancelURL, coupon, giftCard, billingCountry, billingRegion } = request.body;
      const started = await payments.startPurchase({
        gateway,
        returnURL,
        cancelURL,
        guestName,
        guestEmail,
        codes: { coupon, giftCard, sender: { address: request.ip, api: true } },
        ip: request.ip,
        billingCountry,
        billingRegion,
        headers: request.headers,
        userId: username !== undefined && userID === undefined ? await payments.userIdOf(username) : userID === undefined ? undefined : Number(userID),
        lines: lines.map((l) => ({
          productId: Number(l.productID),
          quantity: l.quantity === undefined ? 1 : Number(l.quantity),
          variables: l.variables ?? {},
        })),
      });
      return {
        status: true as const,
        data: {
          paymentID: started.paymentId,
          checkoutURL: started.checkoutURL,
          amount: formatMoney(started.amount),
          currency: started.currency,
          tax: formatMoney(started.tax?.amount ?? 0),
          total: formatMoney(started.amount + (started.tax && !started.tax.inclusive ? started.tax.amount : 0)),
        },
      };
    },
  );
  app.get(
    '/api/payments/:paymentID',
    {
      schema: { tags, summary: 'A payment and its state', params: PaymentParams, response: { 200: PaymentRow }, errors: ['PAYMENT_NOT_FOUND'] },
    },
    async (request) => showPayment(await payments.requirePayment(request.params.paymentID), tz()),
  );
}

/**
 * Gateways' webhooks: the signature over the exact bytes sent is the authentication, so this
 * route alone takes its body raw (whatever the content type) and needs no API key.
 */
async function webhookRoutes(app: FastifyInstance, payments: DbPaymentsService): Promise<void> {
  await app.register(async (webhooks) => {
    webhooks.removeAllContentTypeParsers();
    webhooks.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_request, body, done) => done(null, body));
    webhooks.withTypeProvider<S.TypeBoxProvider>().post(
      '/api/payments/webhooks/:gateway',
      {
        config: { noApiKey: true },
        bodyLimit: WEBHOOK_BODY_LIMIT,
        schema: {
          tags,
          summary: "A payment gateway's webhook (signed by the gateway; no API key)",
          security: [],
          description:
            'Register `<your server>/api/payments/webhooks/stripe` (or `paypal`) at the gateway. A bad signature, an ' +
            'unknown payment or a mismatched amount is a 400; a redelivered event answers 200 `duplicate`.',
          params: WebhookParams,
          response: { 200: WebhookResponse },
          // The body is taken raw (no body schema), so its size limit is listed here; CONFLICT and
          // INVALID_AMOUNT come from recording the completed payment's order and credits.
          errors: [
            'PAYLOAD_TOO_LARGE',
            'GATEWAY_UNAVAILABLE',
            'INVALID_SIGNATURE',
            'INVALID_WEBHOOK',
            'GATEWAY_ERROR',
            'UNKNOWN_PAYMENT',
            'AMOUNT_MISMATCH',
            'CONFLICT',
            'INVALID_AMOUNT',
          ],
        },
      },
      async (request) => {
        const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const result = await payments.webhook(request.params.gateway, { rawBody, headers: request.headers });
        return { status: true as const, data: { result } };
      },
    );
  });
}
