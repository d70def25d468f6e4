import type { FastifyInstance } from 'fastify';
import { DomainError } from '../../core/errors.ts';
import { formatMoney, MAX_CENTS, requireMoney } from '../../core/format.ts';
import { toBool, type TypeBoxProvider } from '../../core/schemas.ts';
import type { PlanInput, SubscriptionState, SubscriptionsService } from './contract.ts';
import type { GatewaySubscriptions } from './gateway.ts';
import {
  AdminListQuery,
  CreatePlanBody,
  GatewayCheckout,
  GatewayCheckoutBody,
  IdParams,
  PlanList,
  PlanRow,
  PlayerCancelBody,
  PlayerChangeBody,
  PlayerListQuery,
  StaffCancelBody,
  StaffChangeBody,
  SubscribeBody,
  SubscriptionList,
  SubscriptionRow,
  UpdatePlanBody,
} from './schemas.ts';

const tags = ['subscriptions'];
const admin = ['admin'];
const price = (value: unknown) => {
  const cents = requireMoney(value, 'VALIDATION_ERROR', 'price');
  if (cents > MAX_CENTS) throw new DomainError('VALIDATION_ERROR', `price must be at most ${formatMoney(MAX_CENTS)}`);
  return cents;
};

/** Plans: which product is sold as a subscription, on what terms. */
function planRoutes(app: FastifyInstance, subs: SubscriptionsService): void {
  const api = app.withTypeProvider<TypeBoxProvider>();
  api.get('/api/admin/subscription-plans', { schema: { tags: admin, summary: 'Subscription plans', response: { 200: PlanList } } }, () => subs.listPlans());
  api.post(
    '/api/admin/subscription-plans',
    {
      schema: {
        tags: admin,
        summary: 'Sell a product as a subscription',
        description: 'A privileged role (one that opens the staff console) is never sold: VALIDATION_ERROR.',
        body: CreatePlanBody,
        response: { 201: PlanRow },
        errors: ['PRODUCT_NOT_FOUND', 'ROLE_NOT_FOUND', 'CONFLICT'],
      },
    },
    async (request, reply) => {
      const b = request.body;
      const input: PlanInput = {
        productId: b.productID,
        intervalUnit: b.intervalUnit as PlanInput['intervalUnit'],
        intervalCount: b.intervalCount ?? 1,
        price: price(b.price),
        trialDays: b.trialDays ?? 0,
        roleId: b.roleID ?? 0,
        roleDays: b.roleDays ?? 0,
        renewWith: (b.renewWith ?? 'purchase') as PlanInput['renewWith'],
        isActive: b.isActive === undefined ? true : toBool(b.isActive),
        group: b.group ?? null,
      };
      return reply.code(201).send(await subs.createPlan(input));
    },
  );
  api.get(
    '/api/admin/subscription-plans/:id',
    { schema: { tags: admin, summary: 'One subscription plan', params: IdParams, response: { 200: PlanRow }, errors: ['SUBSCRIPTION_PLAN_NOT_FOUND'] } },
    (request) => subs.getPlan(Number(request.params.id)),
  );
  api.patch(
    '/api/admin/subscription-plans/:id',
    {
      schema: {
        tags: admin,
        summary: 'Change a subscription plan',
        description: 'New terms apply to new subscriptions; isActive 0 takes the plan off sale, the running subscriptions go on.',
        params: IdParams,
        body: UpdatePlanBody,
        response: { 200: PlanRow },
        errors: ['SUBSCRIPTION_PLAN_NOT_FOUND', 'ROLE_NOT_FOUND'],
      },
    },
    (request) => {
      const b = request.body;
      return subs.updatePlan(Number(request.params.id), {
        intervalUnit: b.intervalUnit as PlanInput['intervalUnit'] | undefined,
        intervalCount: b.intervalCount,
        price: b.price === undefined ? undefined : price(b.price),
        trialDays: b.trialDays,
        roleId: b.roleID,
        roleDays: b.roleDays,
        renewWith: b.renewWith as PlanInput['renewWith'] | undefined,
        isActive: b.isActive === undefined ? undefined : toBool(b.isActive),
        group: b.group,
      });
    },
  );
}

/** Staff: every subscription, cancel and refund. */
function staffRoutes(app: FastifyInstance, subs: SubscriptionsService): void {
  const api = app.withTypeProvider<TypeBoxProvider>();
  api.get(
    '/api/admin/subscriptions',
    { schema: { tags: admin, summary: 'Subscriptions, by product, player and state', querystring: AdminListQuery, response: { 200: SubscriptionList } } },
    (request) => subs.list({ productId: request.query.productID, userId: request.query.userID, status: request.query.status as SubscriptionState | undefined }),
  );
  api.get(
    '/api/admin/subscriptions/:id',
    { schema: { tags: admin, summary: 'One subscription', params: IdParams, response: { 200: SubscriptionRow }, errors: ['SUBSCRIPTION_NOT_FOUND'] } },
    (request) => subs.get(Number(request.params.id)),
  );
  api.post(
    '/api/admin/subscriptions/:id/cancel',
    {
      schema: {
        tags: admin,
        summary: 'Cancel a subscription',
        description: 'now: the expiry commands are queued and the role ends at once; period_end: it runs to the end of the period paid.',
        params: IdParams,
        body: StaffCancelBody,
        response: { 200: SubscriptionRow },
        errors: ['SUBSCRIPTION_NOT_FOUND', 'SUBSCRIPTION_ENDED', 'GATEWAY_UNAVAILABLE', 'GATEWAY_ERROR'],
      },
    },
    (request) => subs.cancel(Number(request.params.id), 'staff', request.body?.when === 'now' ? 'now' : 'period_end'),
  );
  api.post(
    '/api/admin/subscriptions/:id/change',
    {
      schema: {
        tags: admin,
        summary: "Change a wallet subscription to another tier of its plan's group, from its next period",
        description: CHANGE_DESCRIPTION,
        params: IdParams,
        body: StaffChangeBody,
        response: { 200: SubscriptionRow },
        errors: CHANGE_ERRORS,
      },
    },
    (request) => subs.changePlan(Number(request.params.id), 'staff', request.body.planID),
  );
  api.post(
    '/api/admin/subscriptions/:id/refund',
    {
      schema: {
        tags: admin,
        summary: "Refund a subscription's current period and end it",
        description: 'A wallet payment goes back to the balance, in the ledger; the subscription ends at once.',
        params: IdParams,
        response: { 200: SubscriptionRow },
        errors: ['SUBSCRIPTION_NOT_FOUND', 'SUBSCRIPTION_NOT_REFUNDABLE'],
      },
    },
    (request) => subs.refund(Number(request.params.id), request.apiKey?.name),
  );
}

/** The player's: subscribe from the wallet or at a gateway, list, cancel at the period's end. */
function playerRoutes(app: FastifyInstance, subs: SubscriptionsService, gateways: GatewaySubscriptions): void {
  const api = app.withTypeProvider<TypeBoxProvider>();
  api.post(
    '/api/subscriptions/checkout',
    {
      schema: {
        tags,
        summary: 'Subscribe to a product, paying at a gateway (Stripe Billing)',
        description:
          "Send the player to `checkoutURL`. The subscription starts when the gateway's webhook says the first period was paid (or the trial began); " +
          'each renewal is charged by the gateway, and a failed one starts the grace period until the gateway ends the subscription.',
        body: GatewayCheckoutBody,
        response: { 201: GatewayCheckout },
        errors: [
          'USER_NOT_FOUND',
          'PRODUCT_NOT_FOUND',
          'SUBSCRIPTION_PLAN_NOT_FOUND',
          'SUBSCRIPTION_EXISTS',
          'GATEWAY_UNAVAILABLE',
          'GATEWAY_ERROR',
          'INVALID_URL',
          'PURCHASES_BLOCKED',
        ],
      },
    },
    async (request, reply) => {
      const b = request.body;
      const checkout = await gateways.checkout({
        userId: b.userID,
        productId: b.productID,
        gateway: b.gateway as 'stripe' | 'paypal',
        returnURL: b.returnURL,
        cancelURL: b.cancelURL,
      });
      return reply.code(201).send(checkout);
    },
  );
  api.post(
    '/api/subscriptions',
    {
      schema: {
        tags,
        summary: 'Subscribe to a product, paying from the credit balance',
        description:
          'The first period is paid now (or a free trial starts, for a first subscription); each later one is taken from the balance when the period ends. ' +
          'A short balance then starts the grace period (plugins.subscriptions.graceHours), after which the subscription ends.',
        body: SubscribeBody,
        response: { 201: SubscriptionRow },
        errors: [
          'USER_NOT_FOUND',
          'PRODUCT_NOT_FOUND',
          'SUBSCRIPTION_PLAN_NOT_FOUND',
          'SUBSCRIPTION_EXISTS',
          'INSUFFICIENT_BALANCE',
          'ROLE_NOT_FOUND',
          'FORBIDDEN',
        ],
      },
    },
    async (request, reply) => reply.code(201).send(await subs.subscribe(request.body.userID, request.body.productID, request.apiKey?.name)),
  );
  api.get(
    '/api/subscriptions',
    { schema: { tags, summary: "A player's subscriptions, newest first", querystring: PlayerListQuery, response: { 200: SubscriptionList } } },
    (request) => subs.list({ userId: request.query.userID }),
  );
  api.post(
    '/api/subscriptions/:id/change',
    {
      schema: {
        tags,
        summary: "Change a subscription to another tier of its plan's group, from its next period",
        description: CHANGE_DESCRIPTION,
        params: IdParams,
        body: PlayerChangeBody,
        response: { 200: SubscriptionRow },
        errors: CHANGE_ERRORS,
      },
    },
    (request) => subs.changePlan(Number(request.params.id), { userId: request.body.userID }, request.body.planID),
  );
  api.post(
    '/api/subscriptions/:id/cancel',
    {
      schema: {
        tags,
        summary: 'Cancel a subscription at the end of its period',
        params: IdParams,
        body: PlayerCancelBody,
        response: { 200: SubscriptionRow },
        errors: ['SUBSCRIPTION_NOT_FOUND', 'SUBSCRIPTION_ENDED', 'GATEWAY_UNAVAILABLE', 'GATEWAY_ERROR'],
      },
    },
    (request) => subs.cancel(Number(request.params.id), { userId: request.body.userID }, 'period_end'),
  );
}

/** What a change of tier does and may answer, the same for staff and player. */
const CHANGE_DESCRIPTION =
  'From the next period the subscription is paid on the other plan (its price, role and commands: the expiry commands of the tier left, the purchase ones of the new); ' +
  "until then nothing changes. The subscription's own plan again drops a pending change. A Stripe subscription changes at once, Stripe prorating the rest of the period; a PayPal one is GATEWAY_UNAVAILABLE: cancel it and subscribe to the other plan.";
const CHANGE_ERRORS = [
  'SUBSCRIPTION_NOT_FOUND',
  'SUBSCRIPTION_ENDED',
  'SUBSCRIPTION_PLAN_NOT_FOUND',
  'SUBSCRIPTION_PLAN_NOT_IN_GROUP',
  'SUBSCRIPTION_EXISTS',
  'GATEWAY_UNAVAILABLE',
  'GATEWAY_ERROR',
];

export function subscriptionsRoutes(app: FastifyInstance, subs: SubscriptionsService, gateways: GatewaySubscriptions): void {
  planRoutes(app, subs);
  staffRoutes(app, subs);
  playerRoutes(app, subs, gateways);
}
