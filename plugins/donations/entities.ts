import { defineEntity, p } from '../../core/table.ts';

/** One real-money payment, copied from the store's `payment` order when it completes. */
export const DonationsEntry = defineEntity({
  name: 'DonationsEntry',
  tableName: 'donations_entries',
  properties: {
    id: p.integer().primary().autoincrement(),
    /** The store order this payment was recorded as. */
    orderId: p.integer().unique(),
    userId: p.integer(),
    /** As registered when the payment was made (the board needs no lookup per row). */
    username: p.string().length(32),
    /** Cents. */
    amount: p.bigint('number'),
    currency: p.string().length(3),
    /** Stored UTC timestamp; the ranked boards filter on it. */
    creationDate: p.string().length(19).index(),
  },
});

export const entities = [DonationsEntry];
