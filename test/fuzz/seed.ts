/**
 * A little data, made through the public and admin API the way a community would, so that the
 * fuzzer's requests can name things that exist and get past "not found" into the deeper checks.
 */
import type { FastifyInstance } from 'fastify';
import { sessionCompleted, stripeWebhook } from '../gateways.ts';
import { call } from '../helper.ts';

export interface Seeded {
  userId: string;
  username: string;
  otherUsername: string;
  roleId: string;
  storeCategoryId: string;
  productId: string;
  supportCategoryId: string;
  answerId: string;
  ticketId: string;
  /** A ticket of its own for the close route, so the other ticket stays open for messages. */
  closableTicketId: string;
  messageId: string;
  serverId: string;
  itemId: string;
  voteLinkId: string;
  chatUserId: string;
  token: string;
  packageId: string;
  paymentId: string;
  orderId: string;
  deliveryServerId: string;
  commandId: string;
  queueId: string;
  chargebackCommandId: string;
  endpointId: string;
  notificationDeliveryId: string;
  couponId: string;
  giftCardId: string;
  saleId: string;
  planId: string;
  subscriptionId: string;
  blockId: string;
  taxRateId: string;
}

/** The webhook secret the fuzz app's Stripe is configured with (test/fuzz/openapi.fuzz.ts). */
export const FUZZ_STRIPE_WEBHOOK_SECRET = 'whsec_fuzz';

/** One seeding call; anything but the expected status stops the run with the answer. */
async function must(app: FastifyInstance, url: string, body?: Record<string, unknown>, method?: 'PUT' | 'PATCH'): Promise<any> {
  const res = await call(app, url, { body, as: 'json', method });
  if (res.statusCode >= 300) throw new Error(`seeding ${method ?? (body ? 'POST' : 'GET')} ${url} answered ${res.statusCode}: ${res.body}`);
  return res.json();
}

/**
 * Fresh things for one round: a round may delete or change what the last one made. Names carry the
 * round, and each account its own ip, so neither the username check nor the per-ip registration
 * limit refuses them.
 */
export async function seed(app: FastifyInstance, round: number): Promise<Seeded> {
  const tag = `fz${round}`;
  // A fuzzed settings change of the last round may cap what a new account pays; the seeding's checkouts pay.
  await must(app, '/api/admin/settings', { newAccountDailyLimit: 0 }, 'PATCH');
  const register = async (name: string, ip: string) => {
    await must(app, '/api/auth/register', { username: name, password: 'fuzz-password', email: `${name}@example.com`, ip, useragent: 'fuzz' });
    const profile = await must(app, `/api/users?username=${name}`);
    await must(app, '/api/credits/add', { target_username: name, amount: '1000.00' });
    return profile.id as string;
  };
  const username = `${tag}a`;
  const otherUsername = `${tag}b`;
  const userId = await register(username, `10.${round % 250}.0.1`);
  const otherUserId = await register(otherUsername, `10.${round % 250}.0.2`);

  const roleId = (await must(app, '/api/admin/roles', { name: `${tag} seed role` })).id;
  await must(app, `/api/users/${userId}/roles`, { roleID: roleId });

  const storeCategoryId = (await must(app, '/api/admin/store/categories', { name: `${tag} seed category` })).id;
  const productId = (
    await must(app, '/api/admin/store/products', {
      categoryID: storeCategoryId,
      name: `${tag} seed product`,
      price: '1.00',
      giveRoleID: roleId,
      duration: 30,
      // `name` is free text, and the purchase command carries it: typed text reaches a game command.
      variables: [
        { name: 'server', required: false, values: ['eu', 'us'] },
        { name: 'name', required: false, values: [] },
      ],
    })
  ).id;
  const deliveryServerId = (await must(app, '/api/admin/delivery/servers', { name: `${tag} seed game server` })).id;
  const commandId = (
    await must(app, `/api/admin/store/products/${productId}/commands`, {
      serverID: deliveryServerId,
      command: 'give {username} x {var:name}',
      trigger: 'purchase',
    })
  ).id;
  await must(app, '/api/admin/payments', { username, amount: '5.00' });
  const orderId = String((await must(app, '/api/store/buy', { userID: userId, products: [productId] })).orderID);
  const [queued] = await must(app, `/api/admin/delivery/queue?order=${orderId}`);
  const chargebackCommandId = (await must(app, '/api/admin/delivery/chargeback-commands', { serverID: deliveryServerId, command: 'ban {username} chargeback' }))
    .id;

  const supportCategoryId = (await must(app, '/api/admin/support/categories', { name: `${tag} seed category` })).id;
  const answerId = (await must(app, '/api/admin/support/answers', { title: `${tag} seed answer`, content: 'Try again.' })).id;
  const ticket = async () =>
    (await must(app, '/api/support/tickets', { accountID: userId, categoryID: supportCategoryId, title: `${tag} seed ticket`, message: 'Help.' })).data
      .id as string;
  const ticketId = await ticket();
  const closableTicketId = await ticket();
  const messageId = (await must(app, `/api/support/tickets/${ticketId}/messages`, { accountID: userId, message: 'More help.' })).data.id;

  const serverId = (await must(app, '/api/admin/bazaar/servers', { name: `${tag} seed server` })).id;
  await must(app, `/api/bazaar/storages/${userId}/items`, {
    serverID: serverId,
    itemID: 'DIAMOND_SWORD',
    amount: 1,
    durability: 0,
    maxDurability: 0,
    base64: 'AAAA',
  });
  const items: { id: string }[] = await must(app, `/api/bazaar/storages/${userId}/items?serverID=${serverId}`);

  const voteLinkId = (await must(app, '/api/admin/vote-links', { name: `${tag} seed link`, link: 'https://example.com/vote?u={username}' })).id;
  const chatUserId = `7${String(round).padStart(17, '0')}`;
  await must(app, `/api/admin/users/${userId}/linked-accounts/chat`, { externalID: chatUserId }, 'PUT');
  const { token } = await must(app, '/api/auth/sessions', { userID: userId, ip: '10.0.0.9' });
  const packageId = (await must(app, '/api/admin/payments/packages', { name: `${tag} seed package`, price: '5.00', credits: '5.00', bonus: '1.00' })).id;
  const paymentId = (
    await must(app, '/api/payments/checkout', {
      userID: userId,
      packageID: packageId,
      gateway: 'stripe',
      returnURL: 'https://example.com/ok',
      cancelURL: 'https://example.com/no',
    })
  ).data.paymentID;

  // A name that resolves only inside the machine: the server refuses to call it, so the test delivery fails and waits for its retry.
  const endpointId = (await must(app, '/api/admin/notifications/endpoints', { name: `${tag} seed endpoint`, url: 'http://localhost:9/hook' })).id;
  const notificationDeliveryId = (await must(app, `/api/admin/notifications/endpoints/${endpointId}/test`, {})).id;
  const couponId = (await must(app, '/api/admin/promotions/coupons', { code: `${tag}-seed`, kind: 'percent', value: '10' })).id;
  const giftCardId = (await must(app, '/api/admin/promotions/gift-cards', { amount: '5.00' })).id;
  // A sale in the future: it prices nothing the fuzzer buys.
  const saleId = (
    await must(app, '/api/admin/promotions/sales', {
      name: `${tag} seed sale`,
      percent: '10',
      startDate: '2030-01-01 00:00:00',
      endDate: '2030-02-01 00:00:00',
    })
  ).id;

  // A product sold as a subscription (its own, so the seeded product stays a plain buy), and a player on it.
  const planProductId = (await must(app, '/api/admin/store/products', { categoryID: storeCategoryId, name: `${tag} seed plan`, price: '1.00' })).id;
  const planId = (await must(app, '/api/admin/subscription-plans', { productID: planProductId, intervalUnit: 'months', price: '1.00' })).id;
  const subscriptionId = (await must(app, '/api/subscriptions', { userID: userId, productID: planProductId })).id;

  // The other account's top-up paid and then disputed: its block gives the lift route something to lift.
  const disputed = (
    await must(app, '/api/payments/checkout', {
      userID: otherUserId,
      packageID: packageId,
      gateway: 'stripe',
      returnURL: 'https://example.com/ok',
      cancelURL: 'https://example.com/no',
    })
  ).data;
  const session = String(disputed.checkoutURL).split('/').at(-1)!;
  const signed = async (event: Record<string, unknown>) => {
    const res = await stripeWebhook(app, event, FUZZ_STRIPE_WEBHOOK_SECRET);
    if (res.statusCode !== 200) throw new Error(`seeding the ${String(event.type)} webhook answered ${res.statusCode}: ${res.body}`);
  };
  await signed(sessionCompleted(`evt_${tag}_paid`, disputed.paymentID, session, 500));
  const dispute = { id: `dp_${tag}`, object: 'dispute', amount: 500, charge: `ch_${tag}`, payment_intent: `pi_${session}` };
  await signed({ id: `evt_${tag}_disputed`, type: 'charge.dispute.created', data: { object: dispute } });
  const blocks: { id: string; name: string | null }[] = await must(app, '/api/admin/payments/blocks');
  const blockId = blocks.find((b) => b.name === otherUsername)?.id;
  if (!blockId) throw new Error(`seeding: the disputed payment put no block on ${otherUsername}: ${JSON.stringify(blocks)}`);

  // A tax rate, so the rate's delete route has one to name (a round's deletions come last).
  const taxRateId = (await must(app, '/api/admin/payments/tax-rates', { country: 'DE', rate: '19' }, 'PUT')).id;

  return {
    userId,
    username,
    otherUsername,
    roleId,
    storeCategoryId,
    productId,
    supportCategoryId,
    answerId,
    ticketId,
    closableTicketId,
    messageId,
    serverId,
    itemId: items.at(-1)!.id,
    voteLinkId,
    chatUserId,
    token,
    packageId,
    paymentId,
    orderId,
    deliveryServerId,
    commandId,
    queueId: queued.id,
    chargebackCommandId,
    endpointId,
    notificationDeliveryId,
    couponId,
    giftCardId,
    saleId,
    planId,
    subscriptionId,
    blockId,
    taxRateId,
  };
}

/** The collection a `{id}` path parameter points into, by the path segment before it. */
function idFor(seeded: Seeded, path: string): string {
  const collection = /\/([^/{}]+)\/\{id\}/.exec(path)?.[1];
  const support = path.includes('/support/');
  switch (collection) {
    case 'products':
      return seeded.productId;
    case 'categories':
      return support ? seeded.supportCategoryId : seeded.storeCategoryId;
    case 'answers':
      return seeded.answerId;
    case 'servers':
      return path.includes('/delivery/') ? seeded.deliveryServerId : seeded.serverId;
    case 'orders':
      return seeded.orderId;
    case 'queue':
      return seeded.queueId;
    case 'vote-links':
      return seeded.voteLinkId;
    case 'tickets':
      return path.endsWith('/close') ? seeded.closableTicketId : seeded.ticketId;
    case 'messages':
      return seeded.messageId;
    case 'items':
      return seeded.itemId;
    case 'packages':
      return seeded.packageId;
    case 'chargeback-commands':
      return seeded.chargebackCommandId;
    case 'endpoints':
      return seeded.endpointId;
    case 'deliveries':
      return seeded.notificationDeliveryId;
    case 'coupons':
      return seeded.couponId;
    case 'gift-cards':
      return seeded.giftCardId;
    case 'sales':
      return seeded.saleId;
    case 'gift-card-products':
      return seeded.productId;
    case 'subscription-plans':
      return seeded.planId;
    case 'subscriptions':
      return seeded.subscriptionId;
    case 'blocks':
      return seeded.blockId;
    case 'tax-rates':
      return seeded.taxRateId;
    default:
      throw new Error(`no seeded thing for {id} in ${path}`);
  }
}

/**
 * A value that names seeded data, or that a field of that name needs to be meaningful, for a
 * parameter or body field of an operation; undefined when the schema's own example will do.
 */
export function knownValue(seeded: Seeded, path: string, name: string): unknown {
  switch (name) {
    case 'userId':
    case 'user_id':
    case 'userID':
    case 'accountID':
      return seeded.userId;
    case 'username':
    case 'target_username':
    case 'user':
      return seeded.username;
    case 'sender_username':
      return seeded.otherUsername;
    case 'roleId':
    case 'role':
    case 'roleID':
    case 'giveRoleID':
      return seeded.roleId;
    case 'categoryID':
      return path.includes('/support/') ? seeded.supportCategoryId : seeded.storeCategoryId;
    case 'serverID':
      return seeded.serverId;
    case 'ticketId':
      return seeded.ticketId;
    case 'commandId':
      return seeded.commandId;
    case 'chatUserID':
      return seeded.chatUserId;
    case 'token':
      return seeded.token;
    case 'products':
      return [seeded.productId];
    case 'lines':
      return [{ productID: seeded.productId, quantity: 1 }];
    case 'packageID':
      return seeded.packageId;
    case 'paymentID':
      return seeded.paymentId;
    // the gateway the fuzz app enables (its API mocked): webhooks reach the signature check
    case 'gateway':
      return 'stripe';
    case 'returnURL':
    case 'cancelURL':
      return 'https://example.com/back';
    // a path `{id}` names a thing of the route's collection; the query `id` of /api/credits a user
    case 'id':
      return path.includes('{id}') ? idFor(seeded, path) : seeded.userId;
    case 'platform':
      return 'chat';
    case 'amount':
    case 'price':
    case 'credit':
      return '1.00';
    case 'discountedPrice':
      return '0.50';
    case 'ip':
      return '10.0.0.9';
    case 'email':
      return 'fuzz@example.com';
    case 'password':
      return 'fuzz-password';
    case 'timezone':
      return 'UTC';
    case 'link':
      return 'https://example.com/{username}';
    case 'expiryDate':
    case 'expires':
    case 'discountExpiryDate':
      return '2030-01-01 00:00:00';
    case 'type':
      return 'latest';
    default:
      return undefined;
  }
}
