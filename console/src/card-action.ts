import { PluginApiError } from '@gatehouse/plugin-toolkit';
import { nextTick, type Ref, ref } from 'vue';
import { isSessionEnd } from './session.js';

// An action on one card of a list (Devices: a reader's token, a gateway's password or the gateway
// itself), asked first in place (DeviceConfirm.vue): which card is asking and for what, one action
// at a time, and the line it ends with (`done`) or the appliance's refusal (`problem`).

export type CardActionOutcome = 'done' | 'refused' | 'ended' | 'busy';

export function useCardAction<A>() {
  const asking = ref(null) as Ref<A | null>;
  const busy = ref(false);
  const done = ref('');
  const problem = ref('');

  /** Opens the confirmation for `what` (null closes it); the button `yesId` takes the focus. */
  async function ask(what: A | null, yesId?: string): Promise<void> {
    asking.value = what;
    done.value = '';
    problem.value = '';
    await nextTick();
    if (what !== null && yesId) document.getElementById(yesId)?.focus();
  }

  /**
   * Runs the confirmed action, one at a time. `work` answers the line to show when it is done ('' for
   * none). 'refused': the reason is in `problem`; 'ended': the session ended (sign-in takes over);
   * 'busy': another action was running, nothing was done.
   */
  async function run(work: () => Promise<string>): Promise<CardActionOutcome> {
    if (busy.value) return 'busy';
    busy.value = true;
    problem.value = '';
    done.value = '';
    try {
      done.value = await work();
      asking.value = null;
      return 'done';
    } catch (err) {
      if (isSessionEnd(err)) return 'ended';
      problem.value = err instanceof PluginApiError || err instanceof Error ? err.message : String(err);
      return 'refused';
    } finally {
      busy.value = false;
    }
  }

  return { asking, busy, done, problem, ask, run };
}
