import { Type } from '@sinclair/typebox';
import * as S from '../../core/schemas.ts';
import { INTERVAL_UNITS, PlanRow, RENEW_WITH, SUBSCRIPTION_STATES, SubscriptionRow } from './contract.ts';

// Numbers and flags may arrive as strings from forms (AJV coerces integers).
const int = (minimum: number, maximum: number, description?: string) => Type.Integer({ minimum, maximum, description });

const terms = {
  intervalUnit: Type.String({ enum: [...INTERVAL_UNITS] }),
  intervalCount: int(1, 366, 'intervals between payments: 3 with months is quarterly'),
  price: S.decimalText({ description: 'per interval, two decimals at most' }),
  trialDays: int(0, 366, 'free days before the first payment (a first subscription only)'),
  roleID: int(0, 2_147_483_647, 'the role held while it runs; 0 for none'),
  roleDays: int(0, 3660, '0: the role lasts as long as the subscription; else this many days from each payment'),
  renewWith: Type.String({
    enum: [...RENEW_WITH],
    description: "purchase: the product's purchase commands again on each renewal; renewal: its renewal commands",
  }),
  isActive: S.boolish(),
  group: Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()], {
    description: 'plans of one group (and interval) are tiers a running wallet subscription can change between; null: none',
  }),
};

export const CreatePlanBody = Type.Object({
  productID: int(1, 2_147_483_647),
  intervalUnit: terms.intervalUnit,
  intervalCount: Type.Optional(terms.intervalCount),
  price: terms.price,
  trialDays: Type.Optional(terms.trialDays),
  roleID: Type.Optional(terms.roleID),
  roleDays: Type.Optional(terms.roleDays),
  renewWith: Type.Optional(terms.renewWith),
  isActive: Type.Optional(terms.isActive),
  group: Type.Optional(terms.group),
});
export const UpdatePlanBody = Type.Partial(Type.Object(terms));

export const IdParams = S.idParam('id');
export const PlanList = Type.Array(PlanRow);
export const SubscriptionList = Type.Array(SubscriptionRow);

export const AdminListQuery = Type.Object({
  productID: Type.Optional(int(1, 2_147_483_647)),
  userID: Type.Optional(int(1, 2_147_483_647)),
  status: Type.Optional(Type.String({ enum: [...SUBSCRIPTION_STATES] })),
});
export const PlayerListQuery = Type.Object({ userID: int(1, 2_147_483_647) });
export const SubscribeBody = Type.Object({ userID: int(1, 2_147_483_647), productID: int(1, 2_147_483_647) });
export const GatewayCheckoutBody = Type.Object({
  userID: int(1, 2_147_483_647),
  productID: int(1, 2_147_483_647),
  gateway: Type.String({ enum: ['stripe', 'paypal'], description: 'where the player pays; each renewal is charged there' }),
  returnURL: Type.String({ minLength: 1, maxLength: 2000, description: 'where the gateway sends the player after paying' }),
  cancelURL: Type.String({ minLength: 1, maxLength: 2000, description: 'where it sends them if they turn back' }),
});
export const GatewayCheckout = Type.Object({
  reference: S.str('ours: the gateway carries it back when the first period is paid', '12'),
  checkoutURL: S.str("the gateway's page where the player pays", 'https://checkout.stripe.com/c/pay/cs_test_1'),
});
export const PlayerChangeBody = Type.Object({ userID: int(1, 2_147_483_647), planID: int(1, 2_147_483_647) });
export const StaffChangeBody = Type.Object({ planID: int(1, 2_147_483_647) });
export const PlayerCancelBody = Type.Object({ userID: int(1, 2_147_483_647) });
export const StaffCancelBody = Type.Object({
  when: Type.Optional(Type.String({ enum: ['period_end', 'now'], description: "period_end (the default): it runs to the period's end; now: it ends at once" })),
});

export { PlanRow, SubscriptionRow };
