/*
 * SPDX-License-Identifier: MIT
 * Copyright 2026 The causal Authors
 *
 * queue_sleep.pml: the CPU queue's drain putting the queue process to
 * sleep while timepoints make operations ready, and a host thread in
 * wait_idle() while the drain advances head.
 *
 * Models include/causal/queue_process.hpp (basic_queue_process):
 *   submitter  publish (pending = waits + 1, tail_ store, add_timepoint,
 *              drop of the publish hold), then wait_idle (idle_waiters_
 *              fetch_add, idle_word_ load, head_ load, idle_word_ wait);
 *   timepoint  on_wait_met -> drop (pending fetch_sub, sleeping_ exchange,
 *              process::wake) on the thread that signals the semaphore;
 *   drain      drain_ops (tail_ / pending checks, finish, head_ store;
 *              when it stops draining, wake_idle_waiters: a seq_cst
 *              fetch_add(0) of idle_waiters_, idle_word_ bump and
 *              notify_all),
 *              go_to_sleep (suspend, sleeping_ store, head_ready re-check,
 *              sleeping_ exchange, wake), issue_dispatch (suspend; the
 *              block processor's release wakes the queue);
 * and the parts of include/causal/process.hpp and executor.hpp that decide
 * when the queue is drained: process::wake / try_wake (the suspend count
 * and ACTIVE: activate and place it, or leave a draining process to its
 * worker) and basic_executor::run_listed after drain_result::sleep() or
 * more() (count 0: back on the list; else clear ACTIVE with a CAS). The
 * executor's own lists and parking are checked in executor_park.pml; here
 * a worker simply runs the queue whenever it is on the list.
 *
 * Bug classes ruled out:
 *   lost wake-up   an operation is ready but the queue sleeps for good, or
 *                  wait_idle() sleeps for good although every operation has
 *                  completed (the submitter, parked in wait_idle, is not at
 *                  an end label: SPIN reports an invalid end state, and the
 *                  idle check asserts head == tail);
 *   double wake    two threads both see `sleeping` and wake the queue: the
 *                  suspend count would drop below zero (an assertion).
 *
 * Memory model. The sleep handshake is a Dekker pair over seq_cst
 * operations (suspend RMW, sleeping_ store, then the seq_cst loads of tail_
 * and pending; pending fetch_sub, then the sleeping_ exchange), modelled as
 * sequentially consistent. The drain's stores of head_ are release stores,
 * which the CPU may keep past a later load (store -> load): the drainer
 * gets a store buffer holding the latest one until it drains on its own
 * (store_buffer process) or at the drainer's next seq_cst store or RMW
 * (x86-TSO: locked instructions drain it). wake_idle_waiters reads
 * idle_waiters_ with a seq_cst RMW (fetch_add(0)), which drains it first.
 * The submitter's tail_ store is seq_cst (modelled as an immediate store).
 *
 * Scenario: operation 0 has one device wait (a semaphore the signaller
 * thread reaches, firing the timepoint there, or the timepoint fires inline
 * in add_timepoint when the value is already reached); operation 1 is a
 * dispatch with no waits. The drain may stop after any operation
 * (drain_quantum).
 *
 * Mutations (each must make SPIN report an error):
 *   MUT_SLEEP_NO_RECHECK   go_to_sleep skips head_ready().
 *   MUT_SLEEP_FLAG_LATE    go_to_sleep sets sleeping_ after head_ready().
 *   MUT_DROP_NOT_EXCHANGE  drop() reads sleeping_ and then clears it, two
 *                          steps instead of one exchange.
 *   MUT_IDLE_SEEN_LATE     wait_idle reads idle_word_ after head_.
 *   MUT_IDLE_PLAIN_LOAD    wake_idle_waiters reads idle_waiters_ with a
 *                          plain load, which may pass the buffered head_
 *                          store (the code before the fix: wait_idle slept
 *                          for good after the last operation).
 */

#define OPS 2

byte tail = 0;          /* tail_ */
byte head = 0;          /* head_ as other threads see it */
byte pending[OPS];      /* slot pending counts */
bool sleeping = true;   /* sleeping_: asleep from the constructor */
byte count = 2;         /* suspend count: submit hold + constructor's suspend(1) */
bool is_active = false; /* state_bits::active */
bool queued = false;    /* on the executor's immediate list */
byte idle_waiters = 0;  /* idle_waiters_ */
byte idle_word = 0;     /* idle_word_ */
bool reached = false;   /* the waited semaphore has reached the value */
bool armed = false;     /* operation 0's timepoint is registered */
bool dispatch = false;  /* the block processor was issued */
bool waited = false;    /* wait_idle() returned */
byte hbuf = 0;          /* drainer's store buffer: pending head_ store */
bool hfull = false;

/* process::wake(1) on the queue process. */
inline wake_queue() {
  d_step {                                                  /* try_wake CAS */
    assert(count > 0);          /* more wakes than pending suspensions */
    count--;
    if
    :: count == 0 && !is_active -> is_active = true; queued = true  /* activate, place */
    :: else -> skip             /* counted; or resume: the worker re-reads */
    fi
  }
}

/* drop(sl, 1): the last drop makes the operation ready. */
inline drop(s) {
  d_step { pending[s]--; last = (pending[s] == 0) }         /* fetch_sub, seq_cst */
  if
  :: last ->
#ifdef MUT_DROP_NOT_EXCHANGE
     was = sleeping;
     sleeping = false;
#else
     d_step { was = sleeping; sleeping = false }            /* exchange, seq_cst */
#endif
     if
     :: was -> wake_queue()
     :: else -> skip
     fi
  :: else -> skip
  fi;
  d_step { last = false; was = false }
}

/* The drainer's pending head_ store becomes visible. */
inline flush_head() {
  if
  :: hfull -> head = hbuf; hfull = false
  :: else -> skip
  fi
}

/* wake_idle_waiters(): idle_waiters_.fetch_add(0), seq_cst. */
inline wake_idle_waiters() {
#ifdef MUT_IDLE_PLAIN_LOAD
  if                                                        /* load: may pass the store */
#else
  d_step { flush_head() };                                  /* the RMW drains the buffer */
  if
#endif
  :: idle_waiters != 0 ->
     d_step { flush_head(); idle_word++ }                   /* fetch_add + notify_all */
  :: else -> skip
  fi
}

active proctype submitter() {
  bool last, was;
  byte seen;
  /* start(executor): submit drops the submit hold */
  wake_queue();
  /* publish operation 0: one wait plus the publish hold */
  pending[0] = 2;
  tail = 1;                                                 /* release */
  /* add_timepoint: under the semaphore's lock; fires inline if reached */
  if
  :: d_step { reached -> skip } -> drop(0)
  :: d_step { !reached -> armed = true }
  fi;
  drop(0);                                                  /* publish hold */
  /* publish operation 1: a dispatch, no waits */
  pending[1] = 1;
  tail = 2;
  drop(1);
  /* wait_idle(): target = tail_ = 2 */
  idle_waiters++;                                           /* fetch_add, seq_cst */
  do
  :: true ->
#ifndef MUT_IDLE_SEEN_LATE
     seen = idle_word;                                      /* seq_cst */
#endif
     if
     :: head >= 2 -> break                                  /* seq_cst */
     :: else -> skip
     fi;
#ifdef MUT_IDLE_SEEN_LATE
     seen = idle_word;
#endif
     idle_word != seen                                      /* idle_word_.wait_until */
  od;
  idle_waiters--;
  waited = true
}

/* The thread that reaches operation 0's semaphore; the timepoint fires on it. */
active proctype signaller() {
  bool last, was, fire;
  d_step { reached = true; fire = armed }                   /* under the lock */
  if
  :: fire -> drop(0)                                        /* on_wait_met */
  :: else -> skip
  fi
}

/* The block processor of operation 1: runs, then its release wakes the queue. */
active proctype dispatcher() {
  dispatch;                     /* issue_dispatch has suspended the queue */
  wake_queue()
}

/* The drainer's store buffer drains on its own. */
active proctype store_buffer() {
end_idle:
  do
  :: d_step { hfull -> head = hbuf; hfull = false }
  od
}

/* A worker that runs the queue whenever it is on the immediate list. */
active proctype worker() {
  byte h;           /* drain_ops' local head (the drainer's own view) */
  byte myhead = 0;  /* the drainer's latest store to head_ */
  bool ready, was, dispatched = false, slept, advanced;
end_idle:
  do
  :: d_step { queued -> queued = false; slept = false; advanced = false } ->
     /* drain_ops */
     h = myhead;
     do
     :: true ->
        if
        :: h == tail -> break                               /* acquire load */
        :: else -> skip
        fi;
        if
        :: pending[h] != 0 -> break                         /* acquire load */
        :: else -> skip
        fi;
        if
        :: h == 1 && !dispatched ->
           if
           :: advanced -> wake_idle_waiters()
           :: else -> skip
           fi;
           /* issue_dispatch: suspend(1), then the processor runs */
           dispatched = true;
           d_step { flush_head(); count++ }                 /* seq_cst RMW */
           dispatch = true;
           slept = true;
           goto epilogue                                    /* drain_result::sleep() */
        :: else -> skip
        fi;
        /* finish(sl, ok) */
        h++;
        myhead = h;
        d_step { flush_head(); hbuf = h; hfull = true }     /* release store */
        advanced = true;
        if
        :: skip                                             /* next operation */
        :: wake_idle_waiters(); goto epilogue               /* drain_quantum: more() */
        fi
     od;
     if
     :: advanced -> wake_idle_waiters()
     :: else -> skip
     fi;
     /* go_to_sleep(h) */
     slept = true;
     d_step { flush_head(); count++ }                       /* suspend(1): seq_cst RMW */
#ifndef MUT_SLEEP_FLAG_LATE
     d_step { flush_head(); sleeping = true }               /* seq_cst store */
#endif
#ifndef MUT_SLEEP_NO_RECHECK
     /* head_ready(h): tail_, then the slot's pending (seq_cst loads) */
     if
     :: h == tail -> ready = false
     :: else -> skip
     fi;
     if
     :: h != tail -> ready = (pending[h] == 0)
     :: else -> skip
     fi;
#endif
#ifdef MUT_SLEEP_FLAG_LATE
     d_step { flush_head(); sleeping = true }
#endif
     if
     :: ready ->
        d_step { flush_head(); was = sleeping; sleeping = false }   /* exchange */
        if
        :: was -> wake_queue()
        :: else -> skip
        fi
     :: else -> skip
     fi;
epilogue:
     skip;
     /* run_listed: sleep() -> count 0: drain again (push); else clear ACTIVE.
      * more() -> count is 0: back on the list. */
     d_step {
       flush_head();
       if
       :: count == 0 -> queued = true
       :: else -> assert(slept); is_active = false
       fi;
       ready = false; was = false; h = 0; advanced = false
     }
  od
}

/* Nothing can move: every operation completed and wait_idle returned. */
active proctype idle_check() {
  timeout ->
    assert(head == 2 && waited)
}
