/** The payments feature's HTTP shapes. Money fields are loose: a bad amount is INVALID_AMOUNT from the service. */
import { Type } from '@sinclair/typebox';
import * as S from '../../core/schemas.ts';

export const PackageRow = S.row({
  id: S.str(), name: S.str(), price: S.str('decimal'), currency: S.str(), credits: S.str('decimal'),
  bonus: S.str('decimal: credits added on top'), creationDate: S.str(),
});

const packageFields = {
  name: Type.String({ minLength: 1, maxLength: 64 }),
  price: S.numeric({ description: 'decimal, at least 0.01' }),
  currency: Type.String({ description: 'three letters; the site currency when omitted' }),
  credits: S.numeric({ description: 'decimal' }),
  bonus: S.numeric({ description: 'decimal; 0 when omitted' }),
};

export const PackageCreateBody = Type.Object({
  name: packageFields.name, price: packageFields.price, credits: packageFields.credits,
  currency: Type.Optional(packageFields.currency), bonus: Type.Optional(packageFields.bonus),
});

export const PackagePatchBody = Type.Partial(Type.Object(packageFields));

export const PackageParams = S.idParam('id');

export const CheckoutBody = Type.Object({
  userID: Type.Optional(S.numeric()),
  username: Type.Optional(Type.String({ maxLength: 64 })),
  amount: Type.Optional(S.numeric({ description: 'decimal in the site currency; or packageID' })),
  packageID: Type.Optional(S.numeric()),
  gateway: Type.String({ minLength: 1, maxLength: 32 }),
  returnURL: Type.String({ minLength: 1, maxLength: 2000 }),
  cancelURL: Type.String({ minLength: 1, maxLength: 2000 }),
});

export const PaymentParams = Type.Object({ paymentID: Type.String({ pattern: '^[0-9a-f]{32}$' }) });

export const PaymentRow = S.row({
  paymentID: S.str(), userID: S.str(), gateway: S.str(), status: S.str('pending, completed, refunded or disputed'),
  amount: S.str('decimal'), currency: S.str(), credits: S.str('decimal, bonus included'), bonus: S.str('decimal'),
  packageID: S.strOrNull(), orderID: S.strOrNull('the store order, once completed'), checkoutURL: S.str(),
  reclaimed: S.str('decimal: credits taken back by a refund or dispute'),
  debt: S.str('decimal: credits a refund or dispute could not take back (already spent)'),
  creationDate: S.str(), updateDate: S.str(),
});

export const CheckoutResponse = S.ok({ data: Type.Object({ paymentID: S.str(), checkoutURL: S.str() }) });

export const WebhookParams = Type.Object({ gateway: Type.String({ maxLength: 32 }) });

export const WebhookResponse = S.ok({
  data: Type.Object({ result: S.str('completed, refunded, disputed, ignored (no payment event), duplicate (seen before) or unchanged') }),
});
