/*
 * SPDX-License-Identifier: MIT
 * Copyright 2026 The causal Authors
 *
 * executor_park.pml: a worker of basic_executor going to sleep on its park
 * word while another thread places work on the immediate list.
 *
 * Models include/causal/executor.hpp:
 *   worker side   basic_executor::run_worker (the spinning_ count),
 *                 park (park word read, parked-mask announce, spinning_
 *                 decrement, has_work_seq_cst re-check, park_word wait,
 *                 un-announce) and wake_tree;
 *   list          detail::process_list::push_chain / take / nonempty_seq_cst
 *                 (the pushed stack head_, fifo_count_, the token);
 *   publisher     place / place_batch -> request_workers,
 *                 request_parked_workers, wake_one (desired_wake_ for the
 *                 wake tree); a worker that leaves entries in the FIFO
 *                 calls request_workers(1) from start_batch.
 * The activation rings are in executor_rings.pml; the compute slots and
 * the overflow list publish and re-check exactly like the immediate list
 * (a seq_cst store or CAS, then the mask load) and are left out.
 *
 * Bug class ruled out: the lost wake-up. Work is on the list, the producer
 * has finished, and every worker is parked on its park word for good.
 *
 * Memory model. Every operation of the handshake is seq_cst or an RMW
 * (list CAS, fifo_count_ store, parked-mask fetch_or/fetch_and, spinning_
 * RMWs and loads, park word fetch_add), and the code relies on them being
 * Dekker pairs, so the model is sequentially consistent: each atomic access
 * is one Promela step and SPIN tries every interleaving. Relaxed looks
 * (take()'s first peek, maybe_nonempty) may be stale; the model lets them
 * report "empty" at any time, which only adds behaviours. The park word
 * wait is boost::atomic wait: it returns once the word differs from the
 * value read before the announce, so it is modelled as a guard on that.
 * notify_one follows the bump unconditionally and is folded into it.
 *
 * Property: when nothing can move any more (SPIN's timeout: the producer
 * is done and every worker is blocked in its wait), the list is empty and
 * every item was drained. Parked workers sit at end labels, so that state
 * is otherwise a valid end state.
 *
 * Mutations (each must make SPIN report an error):
 *   MUT_NO_RECHECK      park() skips has_work_seq_cst() after announcing.
 *   MUT_SEEN_LATE       the park word is read after the re-check, so a
 *                       wake that lands between them is lost.
 *   MUT_MASK_FIRST      the publisher reads the parked mask before its
 *                       push is visible (what a release push, or a plain
 *                       store without a barrier, allows: store -> load).
 */

#define W 2          /* worker threads */
#define FANOUT 2     /* Traits::wake_fanout */
#define BATCH 32     /* Traits::immediate_batch */
#define TOTAL 3      /* items the producer places */
#define BIT(i) (1 << (i))

byte stack = 0;      /* process_list::head_: entries pushed, not yet moved */
byte fifo = 0;       /* process_list::fifo_count_ */
bool token = false;  /* process_list::token_ */
byte parked = 0;     /* parked_[0].bits */
byte spinning = 0;   /* spinning_ */
byte desired = 0;    /* desired_wake_ */
byte park[W];        /* each worker's park word */
byte drained = 0;    /* items run by some worker */

/*
 * Local computation is folded into the step of the shared access it
 * follows (d_step), so that the state space holds only interleavings of
 * shared accesses.
 */

/* wake_one(): claims the lowest bit of the parked mask and bumps the
 * worker's park word; retries with the bits left if another waker took
 * the bit first. */
inline wake_one(woke) {
  d_step { m = parked; woke = false }                       /* relaxed */
  do
  :: m == 0 -> break
  :: else ->
     d_step {
       i = 0;
       do
       :: (m >> i) & 1 -> break
       :: else -> i++
       od;
       before = parked;                                     /* fetch_and */
       parked = parked & ~BIT(i)
     }
     if
     :: (before & BIT(i)) != 0 ->
        d_step { park[i]++; woke = true; m = 0; before = 0 } /* fetch_add + notify_one */
        break
     :: else -> d_step { m = before & ~BIT(i); before = 0 }
     fi
  od;
  i = 0
}

/* request_parked_workers(n), after any_parked() saw a bit. */
inline request_parked_workers(n) {
  d_step {
    sp = spinning;                                          /* seq_cst load */
    want = 0;
    if
    :: sp < n ->
       want = n - sp;
       if
       :: want > W -> want = W
       :: else -> skip
       fi
    :: else -> skip
    fi;
    sp = 0
  }
  if
  :: want == 0 -> skip              /* spinners re-check before parking */
  :: else ->
     if
     :: want > 1 -> d_step { desired = desired + want - 1 }
     :: else -> skip
     fi;
     want = 0;
     wake_one(woke)
  fi
}

/* request_workers(n): any_parked() (seq_cst load), then the slow path. */
inline request_workers(n) {
  if
  :: parked == 0 -> skip
  :: else -> request_parked_workers(n)
  fi
}

/* Pushes k entries in one CAS (push_chain), then asks for n workers. */
inline place(k, n) {
#ifdef MUT_MASK_FIRST
  /* The mask load overtakes the push (store -> load reordering). */
  if
  :: parked == 0 -> d_step { stack = stack + k }
  :: else -> d_step { stack = stack + k }; request_parked_workers(n)
  fi
#else
  d_step { stack = stack + k };                             /* seq_cst CAS */
  request_workers(n)
#endif
}

active proctype producer() {
  byte m, before, i, sp, want;
  bool woke;
  place(2, 2);     /* place_batch: a chain of two, one request for two */
  place(1, 1)      /* place: one more */
}

active [W] proctype worker() {
  byte me = _pid - 1;   /* the producer is pid 0 */
  bool spin = false;    /* w.spinning */
  byte seen, n, left, m, before, i, sp, want, d, take;
  bool woke;

top:
  /* Dead temporaries back to 0, so states differ only in what matters.
   * The park word is reset too: only this worker compares it, and only
   * with a value it reads after this point, so its absolute value is
   * irrelevant here (every bump still counts from now on). */
  atomic { seen = 0; n = 0; left = 0; d = 0; take = 0; park[me] = 0 }
  /* step() -> take_listed() -> process_list::take() */
  if
  :: true -> goto nothing              /* a relaxed peek: may be stale */
  :: d_step { !token -> token = true } ->                   /* exchange */
     n = fifo;                                              /* relaxed, token held */
     if
     :: n == 0 -> d_step { n = stack; stack = 0 }           /* exchange(nullptr) */
     :: else -> skip
     fi;
     if
     :: n == 0 -> token = false; goto nothing               /* release */
     :: else -> skip
     fi;
     d_step {
       /* k = clamp(n / share, 1, batch), share = workers + 1 */
       left = n / (W + 1);
       if
       :: left == 0 -> left = 1
       :: left > BATCH -> left = BATCH
       :: else -> skip
       fi;
       drained = drained + left;       /* taken into its private batch */
       left = n - left;
       n = 0;
       fifo = left                     /* seq_cst store */
     }
     token = false;                    /* release */
     if                                /* start_batch */
     :: left != 0 -> request_workers(1)
     :: else -> skip
     fi;
     /* It runs the batch; run_worker sees progress. */
     if
     :: spin -> d_step { spin = false; spinning-- }
     :: else -> skip
     fi;
     goto top
  fi;

nothing:
  if
  :: !spin -> d_step { spin = true; spinning++ }
  :: else -> skip
  fi;
  if
  :: goto top                           /* another spin round */
  :: skip                               /* spin budget spent: park */
  fi;

  /* park(w) */
#ifndef MUT_SEEN_LATE
  seen = park[me];                      /* acquire */
#endif
  parked = parked | BIT(me);            /* fetch_or, seq_cst */
  if
  :: spin -> d_step { spin = false; spinning-- }
  :: else -> skip
  fi;
#ifndef MUT_NO_RECHECK
  /* has_work_seq_cst(): immediate_.nonempty_seq_cst(), two loads */
  if
  :: stack != 0 -> goto unannounce
  :: else -> skip
  fi;
  if
  :: fifo != 0 -> goto unannounce
  :: else -> skip
  fi;
#endif
#ifdef MUT_SEEN_LATE
  seen = park[me];
#endif
end_parked:
  park[me] != seen;                     /* park.wait(seen) */
  parked = parked & ~BIT(me);           /* fetch_and */
  /* wake_tree(): claim up to FANOUT of desired_wake_, wake that many */
  d = desired;                          /* relaxed */
  do
  :: d == 0 -> goto top
  :: else ->
     d_step {
       take = (d < FANOUT -> d : FANOUT);
       if
       :: desired == d -> desired = d - take; d = 0         /* CAS won */
       :: else -> d = desired; take = 0                     /* CAS lost: reload */
       fi
     }
     if
     :: take != 0 -> break
     :: else -> skip
     fi
  od;
  do
  :: take == 0 -> break
  :: else ->
     wake_one(woke);
     if
     :: !woke -> d_step { desired = 0; take = 0; woke = false }
     :: else -> d_step { take--; woke = false }
     fi
  od;
  goto top;

unannounce:
  parked = parked & ~BIT(me);
  goto top
}

/* The idle state: nothing else can move. */
active proctype idle_check() {
  timeout ->
    assert(stack == 0 && fifo == 0 && drained == TOTAL)
}
