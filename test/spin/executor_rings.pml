/*
 * SPDX-License-Identifier: MIT
 * Copyright 2026 The causal Authors
 *
 * executor_rings.pml: a thread that places processes through its
 * activation ring (a plain store) while workers of basic_executor park,
 * each issuing membarrier(PRIVATE_EXPEDITED) before its re-check.
 *
 * Models include/causal/detail/producer_rings.hpp:
 *   ring_claims::claim (the seq_cst raise of high_water before the first
 *   publication), ring_set::push_one / publish (release store of the slot
 *   word in asymmetric mode, seq_cst exchange in symmetric mode),
 *   ring_set::take (the busy bit of head, the run of published entries,
 *   the release store of the new head), any_entry / nonempty_seq_cst;
 * and its use in include/causal/executor.hpp:
 *   basic_executor::place (ring or immediate list, by a relaxed look at
 *   spinning_), request_workers, wake_one, take_listed / take_from_rings /
 *   start_batch (request_workers(1) when entries are left), and park():
 *   announce, spinning_ decrement, the high_water check, the membarrier
 *   (asymmetric_barrier_heavy), has_work_seq_cst, park word wait.
 * The immediate list appears as one counter taken one entry per step; its
 * own handshake is checked in executor_park.pml.
 *
 * Bug class ruled out: an activation published to a ring while every
 * worker parks and none sees it (a lost wake-up).
 *
 * Memory model. The seq_cst and RMW operations (list CAS, parked mask,
 * spinning_, high_water CAS, head CAS, park word) are sequentially
 * consistent here, as in executor_park.pml. The ring publication is not:
 * in asymmetric mode the producer's slot store is a release store followed
 * by a seq_cst load of the parked mask, and the CPU may let the load pass
 * the store (store -> load). The model gives the producer a store buffer:
 * a ring store goes to `rbuf` and becomes visible (`rtail`) at any later
 * moment (the store_buffer process), when the producer does a locked RMW
 * (the list CAS drains it, as on x86-TSO), or when a parking worker issues
 * its membarrier. The membarrier makes every running thread of the process
 * pass a full barrier before the syscall returns, so it is modelled as
 * forcing the producer's pending stores visible before the re-check. In
 * symmetric mode (-DSYMMETRIC: no membarrier, or TSan) the slot word is
 * published with an exchange, a full barrier on the producer, and no
 * membarrier is issued. A consumer's release store of head is made visible
 * at once: a stale head can only make another worker see the slot of an
 * entry already taken (slots are never cleared) and stay awake, never hide
 * an entry. Relaxed peeks may report "empty" at any time.
 *
 * Property: when nothing can move any more, the list and the ring are empty
 * and every activation was drained (parked workers are at end labels).
 *
 * Mutations (each must make SPIN report an error):
 *   MUT_NO_MEMBARRIER         asymmetric mode, but park() issues no barrier.
 *   MUT_BARRIER_BEFORE_ANNOUNCE
 *                             the membarrier comes before the parked-mask
 *                             fetch_or, so a publication after it can pass
 *                             the producer's mask load unseen.
 *   MUT_NO_RING_RECHECK       has_work_seq_cst() forgets the rings.
 */

#define W 2          /* worker threads */
#define TOTAL 2      /* activations placed by the producer */
#define BIT(i) (1 << (i))

byte list = 0;       /* the immediate list (see above) */
byte high_water = 0; /* ring_claims::high_water */
byte rtail = 0;      /* ring entries visible to other threads */
byte rbuf = 0;       /* ring entries stored, still in the producer's buffer */
byte rhead = 0;      /* ring.head >> 1 */
bool rbusy = false;  /* ring.head & 1 */
byte parked = 0;     /* parked_[0].bits */
byte spinning = 0;   /* spinning_ */
byte park[W];        /* each worker's park word */
byte drained = 0;    /* activations taken by some worker */

/* Makes the producer's buffered ring stores visible. */
inline drain_store_buffer() {
  rtail = rtail + rbuf;
  rbuf = 0
}

inline wake_one() {
  d_step { m = parked }                                     /* relaxed */
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
        d_step { park[i]++; m = 0; before = 0 }             /* fetch_add + notify_one */
        break
     :: else -> d_step { m = before & ~BIT(i); before = 0 }
     fi
  od;
  i = 0
}

/* request_workers(1): any_parked(), then spinning_ (both seq_cst loads). */
inline request_one() {
  if
  :: parked == 0 -> skip
  :: else ->
     if
     :: spinning >= 1 -> skip
     :: else -> wake_one()
     fi
  fi
}

active proctype producer() {
  byte m, before, i, placed = 0;
  /* First placement: bind_producer -> claim(): owner CAS, then the
   * seq_cst CAS of high_water, both before anything is published. */
  high_water = 1;
  do
  :: placed == TOTAL -> break
  :: else ->
     /* place(): a relaxed look at spinning_ picks the list or the ring */
     if
     :: true ->                                             /* push_one */
#ifdef SYMMETRIC
        d_step { drain_store_buffer(); rtail++ }            /* seq_cst exchange */
#else
        rbuf++                                              /* release store */
#endif
     :: true ->
        d_step { drain_store_buffer(); list++ }             /* push: seq_cst CAS */
     fi;
     request_one();
     placed++
  od
}

/* The producer's store buffer drains on its own, at any time. */
active proctype store_buffer() {
end_idle:
  do
  :: d_step { rbuf > 0 -> rtail++; rbuf-- }
  od
}

active [W] proctype worker() {
  byte me = _pid - 2;   /* producer and store_buffer come first */
  bool spin = false;    /* w.spinning */
  byte seen, runlen, got, h, m, before, i;

top:
  atomic { seen = 0; runlen = 0; got = 0; h = 0; park[me] = 0 }
  /* step() -> take_listed(): the list and the rings, in either order */
  if
  :: true -> goto nothing                                   /* stale peeks */
  :: d_step { list > 0 -> list--; drained++ } -> goto progress
  :: d_step { !rbusy && rhead < rtail -> rbusy = true } ->  /* head CAS */
     d_step {
       runlen = rtail - rhead;            /* acquire loads of the run */
       got = runlen / (W + 1);
       if
       :: got == 0 -> got = 1
       :: else -> skip
       fi;
       drained = drained + got;
       runlen = runlen - got
     }
     d_step { rhead = rhead + got; rbusy = false; got = 0 }   /* release */
     if                                                     /* start_batch */
     :: runlen != 0 -> request_one()
     :: else -> skip
     fi;
     goto progress
  fi;

progress:
  if
  :: spin -> d_step { spin = false; spinning-- }
  :: else -> skip
  fi;
  goto top;

nothing:
  if
  :: !spin -> d_step { spin = true; spinning++ }
  :: else -> skip
  fi;
  if
  :: goto top                                               /* spin round */
  :: skip                                                   /* park */
  fi;

  /* park(w) */
  seen = park[me];
#if !defined(SYMMETRIC) && defined(MUT_BARRIER_BEFORE_ANNOUNCE)
  if
  :: high_water != 0 -> d_step { drain_store_buffer() }     /* membarrier */
  :: else -> skip
  fi;
#endif
  parked = parked | BIT(me);                                /* fetch_or */
  if
  :: spin -> d_step { spin = false; spinning-- }
  :: else -> skip
  fi;
#if !defined(SYMMETRIC) && !defined(MUT_NO_MEMBARRIER) && !defined(MUT_BARRIER_BEFORE_ANNOUNCE)
  /* !symmetric() && high_water.load(seq_cst) != 0 */
  if
  :: high_water != 0 -> d_step { drain_store_buffer() }     /* membarrier */
  :: else -> skip
  fi;
#endif
  /* has_work_seq_cst() */
  if
  :: list != 0 -> goto unannounce
  :: else -> skip
  fi;
#ifndef MUT_NO_RING_RECHECK
  /* rings_->nonempty_seq_cst(): high_water, head, then the slot at head */
  if
  :: high_water == 0 -> goto wait
  :: else -> skip
  fi;
  h = rhead;
  if
  :: h < rtail -> goto unannounce                           /* holds(slot, h) */
  :: else -> skip
  fi;
#endif
wait:
  h = 0;
end_parked:
  park[me] != seen;                                         /* park.wait(seen) */
  parked = parked & ~BIT(me);
  goto top;

unannounce:
  parked = parked & ~BIT(me);
  goto top
}

active proctype idle_check() {
  timeout ->
    assert(list == 0 && rbuf == 0 && rhead == rtail && drained == TOTAL)
}
