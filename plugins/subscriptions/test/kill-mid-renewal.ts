/**
 * Loaded into a server with `--import` (NODE_OPTIONS): the process SIGKILLs itself right after a
 * subscription renewal's wallet debit, inside the renewal's transaction, before it commits: the
 * window between the charge and the commit.
 */
import { DbCreditsService } from '../../credits/service.ts';

const change = DbCreditsService.prototype.change;
DbCreditsService.prototype.change = async function (this: DbCreditsService, ...args: Parameters<typeof change>) {
  const balance = await change.apply(this, args);
  if (args[2].reason === 'subscription' && process.env.KILL_AFTER_SUBSCRIPTION_DEBIT === '1') process.kill(process.pid, 'SIGKILL');
  return balance;
};
