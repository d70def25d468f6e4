// Written by npm run migration:create; lists every migration of this folder in order.
import m0 from './20261123075932_payments_init.ts';
import m1 from './20261123110906_payments_payment_date_index.ts';
import m2 from './20261125183955_payments_direct_purchases.ts';
import m3 from './20261128085657_payments_checkouts.ts';
import m4 from './20261128121858_payments_disputes.ts';
import m5 from './20261128123500_payments_guest_email.ts';
import m6 from './20261128124928_payments_taxes.ts';
import m7 from './20261128154236_payments_tax_rates.ts';

export const migrations = [m0, m1, m2, m3, m4, m5, m6, m7];
