/** The payments feature's HTTP shapes. Money fields are loose: a bad amount is INVALID_AMOUNT from the service. */
import { Type } from '@sinclair/typebox';
import * as S from '../../core/schemas.ts';
import { promotionCodes } from '../store/contract.ts';

const PAYMENT_ID = '9b2f4c7d1e6a48f0b3c5d7e9a1f2b4c6';
const CHECKOUT_URL = 'https://checkout.stripe.com/c/pay/cs_test_a1B2c3D4e5F6';

export const PackageRow = S.row({
  id: S.idStr(),
  name: S.example('1000 credits'),
  price: S.moneyStr(),
  currency: S.str(undefined, S.EXAMPLE.currency),
  credits: S.str('decimal', '10.00'),
  bonus: S.str('decimal: credits added on top', '1.00'),
  creationDate: S.dateStr(),
});

const packageFields = {
  name: Type.String({ minLength: 1, maxLength: 64 }),
  price: S.numeric({ description: 'decimal, at least 0.01' }),
  currency: Type.String({ description: 'three letters; the site currency when omitted' }),
  credits: S.numeric({ description: 'decimal' }),
  bonus: S.numeric({ description: 'decimal; 0 when omitted' }),
};

export const PackageCreateBody = Type.Object({
  name: packageFields.name,
  price: packageFields.price,
  credits: packageFields.credits,
  currency: Type.Optional(packageFields.currency),
  bonus: Type.Optional(packageFields.bonus),
});

export const PackagePatchBody = Type.Partial(Type.Object(packageFields));

export const PackageParams = S.idParam('id');

/** The buyer's place, for the owner's tax rates (site setting taxMode on, a gateway other than Stripe). */
const billing = {
  billingCountry: Type.Optional(
    Type.String({
      maxLength: 8,
      description: "the buyer's country, ISO 3166-1 alpha-2; while tax is on at a gateway other than Stripe, required unless the owner's proxy header gives it",
      examples: ['DE'],
    }),
  ),
  billingRegion: Type.Optional(
    Type.String({ maxLength: 8, description: 'the state or province (ISO 3166-2 suffix) where rates differ by it', examples: ['CA'] }),
  ),
};

export const CheckoutBody = Type.Object({
  userID: Type.Optional(S.numeric()),
  username: Type.Optional(Type.String({ maxLength: 64 })),
  amount: Type.Optional(S.numeric({ description: 'decimal in the site currency; or packageID' })),
  packageID: Type.Optional(S.numeric()),
  gateway: Type.String({ minLength: 1, maxLength: 32 }),
  returnURL: Type.String({ minLength: 1, maxLength: 2000 }),
  cancelURL: Type.String({ minLength: 1, maxLength: 2000 }),
  ...billing,
});

export const PurchaseBody = Type.Object({
  gateway: Type.String({ minLength: 1, maxLength: 32 }),
  userID: Type.Optional(S.numeric({ description: "the buyer's account; or username; or guestName" })),
  username: Type.Optional(Type.String({ maxLength: 64 })),
  guestName: Type.Optional(Type.String({ maxLength: 64, description: "a guest's in-game name (3 to 16 of A-Z a-z 0-9 _): the commands run for it" })),
  guestEmail: Type.Optional(
    Type.String({
      maxLength: 191,
      description: "a guest's email for the receipt and the order's link: required, optional or ignored as the guestEmail setting says",
    }),
  ),
  lines: Type.Array(
    Type.Object({
      productID: S.numeric(),
      quantity: Type.Optional(S.numeric({ description: '1 to 100; 1 when omitted' })),
      variables: Type.Optional(Type.Record(Type.String(), Type.String())),
    }),
    { minItems: 1, maxItems: 100 },
  ),
  ...promotionCodes,
  returnURL: Type.String({ minLength: 1, maxLength: 2000 }),
  cancelURL: Type.String({ minLength: 1, maxLength: 2000 }),
  ...billing,
});

export const PurchaseResponse = S.ok({
  data: Type.Object({
    paymentID: S.str(undefined, PAYMENT_ID),
    checkoutURL: S.str(undefined, CHECKOUT_URL),
    amount: S.moneyStr("decimal: the basket's price from the catalogue"),
    currency: S.str(undefined, S.EXAMPLE.currency),
    tax: S.moneyStr("decimal: the tax charged by the owner's rate table (taxMode on); 0.00 when none, or when Stripe computes it at its checkout"),
    total: S.moneyStr('decimal: what the gateway is asked for: amount, plus tax when tax is added at checkout'),
  }),
});

export const PaymentParams = Type.Object({ paymentID: Type.String({ pattern: '^[0-9a-f]{32}$' }) });

export const PaymentRow = S.row({
  paymentID: S.str(undefined, PAYMENT_ID),
  kind: S.str('top-up or purchase (a basket paid directly)', 'top-up'),
  userID: S.str('0 for a guest', '7'),
  guestName: S.strOrNull("a guest's in-game name", null),
  guestEmail: S.strOrNull("a guest's email for the receipt", null),
  gateway: S.example('stripe'),
  status: S.str(
    'pending, completed, credited (a purchase no longer possible, its money on the balance), refund-due, refunded, disputed or expired',
    'completed',
  ),
  amount: S.moneyStr(),
  currency: S.str(undefined, S.EXAMPLE.currency),
  credits: S.str('decimal, bonus included', '11.00'),
  bonus: S.str('decimal', '1.00'),
  packageID: S.strOrNull(undefined, '3'),
  orderID: S.strOrNull('the store order, once completed', '310'),
  checkoutURL: S.str(undefined, CHECKOUT_URL),
  reclaimed: S.str('decimal: credits taken back by a refund or dispute', '0.00'),
  debt: S.str('decimal: credits a refund or dispute could not take back (already spent)', '0.00'),
  creationDate: S.dateStr(),
  updateDate: S.dateStr(),
});

export const CheckoutResponse = S.ok({ data: Type.Object({ paymentID: S.str(undefined, PAYMENT_ID), checkoutURL: S.str(undefined, CHECKOUT_URL) }) });

export const WebhookParams = Type.Object({ gateway: Type.String({ maxLength: 32 }) });

export const WebhookResponse = S.ok({
  data: Type.Object({
    result: S.str(
      'completed, credited or refund-due (a purchase no longer possible), refunded, disputed, reinstated (a dispute won, its credits back), ' +
        'lost (a dispute lost), ignored (no payment event), duplicate (seen before) or unchanged; for a subscription paid at the gateway: ' +
        'started, renewed, payment_failed or ended',
      'completed',
    ),
  }),
});
