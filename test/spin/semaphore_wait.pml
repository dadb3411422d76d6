/*
 * SPDX-License-Identifier: MIT
 * Copyright 2026 The causal Authors
 *
 * semaphore_wait.pml: host threads parked in basic_semaphore::wait while
 * another thread signals (or fails) the semaphore, and the semaphore is
 * destroyed as soon as the waits it owes have returned.
 *
 * Models include/causal/semaphore.hpp (process_local scope):
 *   waiter     wait_until -> poll_wait (spin phase), park_until (waiters_
 *              fetch_add, wake_ load, poll_parked's seq_cst loads of failed_
 *              and payload_, wake_.wait_until, waiters_ fetch_sub);
 *   signaller  reach (lock_, payload_ store, due timepoints and begin_wake
 *              under the lock, unlock, end_wake -- wake_ fetch_add,
 *              notify_all, notifying_ fetch_sub -- and then fire_all) and
 *              fail (failed_ store, begin_wake, the same order after it);
 *   destroyer  ~basic_semaphore (lock_, take_all, unlock, fire_all, the
 *              spin on notifying_; then the memory is gone);
 * and the futex behind ext::native_park_word::wait_until: the user-space
 * re-check, then FUTEX_WAIT, which sleeps only while the word still holds
 * the value, until a FUTEX_WAKE from notify_all.
 *
 * Two scenarios. Default: the signaller reaches 1, then reaches 2 or
 * fails; waiter A waits for 1; the owner waits for 2, joins A and destroys
 * the semaphore. -DCALLBACK_DESTROYS: waiter A waits for 10; the signaller
 * reaches 1, which fires a timepoint whose callback, on the signalling
 * thread, reaches 10, waits until A has returned and destroys the
 * semaphore (the case of the semaphore_test "a timepoint callback may
 * destroy the semaphore ..."). Each wait polls zero or one time before it
 * parks (the spin phase).
 *
 * Bug classes ruled out:
 *   lost wake-up   a waiter parked for good although the payload reached
 *                  its value or the semaphore failed; or a destructor that
 *                  waits for a notifying_ count nobody will drop (SPIN
 *                  reports either as an invalid end state: every thread
 *                  here must finish);
 *   use after free the signaller touching the semaphore (its lock, the
 *                  waiter count, the park word, notifying_) after the
 *                  destructor returned (an assertion on every such access).
 *
 * Memory model. The handshake is a Dekker pair over seq_cst operations
 * (payload_ / failed_ store then waiters_ load; waiters_ fetch_add then
 * payload_ / failed_ loads), and the rest runs under the spin lock or is an
 * RMW, so the model is sequentially consistent: one Promela step per
 * atomic access.
 *
 * Mutations (each must make SPIN report an error):
 *   MUT_NO_PARKED_RECHECK     the waiter polls before announcing itself in
 *                             waiters_ and parks without polling again.
 *   MUT_SEEN_LATE             park_until reads wake_ after poll_parked.
 *   MUT_BEGIN_WAKE_UNLOCKED   begin_wake() runs after the lock is released.
 *   MUT_NOTIFYING_EARLY       end_wake() drops notifying_ before it bumps
 *                             and notifies the park word.
 *   MUT_DTOR_NO_WAIT          the destructor does not wait for notifying_.
 *   MUT_FIRE_BEFORE_END_WAKE  (with CALLBACK_DESTROYS) reach runs the
 *                             callbacks before end_wake, so a callback's
 *                             destructor waits for the count its own
 *                             thread holds.
 */

byte payload = 0;     /* payload_ */
bool failed = false;  /* failed_ */
bool locked = false;  /* lock_ */
byte waiters = 0;     /* waiters_ */
byte wake = 0;        /* wake_ (park word) */
byte notifying = 0;   /* notifying_ */
bool asleep[2];       /* waiter i sleeps in FUTEX_WAIT on wake_ */
bool freed = false;   /* the destructor has returned */
bool a_done = false;  /* waiter A has returned (the owner joins it) */

/* Every access the signaller makes to the semaphore's memory. */
#define LIVE assert(!freed)

inline lock() {
  d_step { !locked -> LIVE; locked = true }                 /* exchange(acquire) */
}
inline unlock() {
  d_step { LIVE; locked = false }                           /* store(release) */
}

/* begin_wake(): under the lock, after the payload / failure store. */
inline begin_wake(must) {
  d_step { LIVE; must = (waiters != 0) }                    /* seq_cst load */
  if
  :: must -> d_step { LIVE; notifying++ }                   /* relaxed RMW */
  :: else -> skip
  fi
}

inline end_wake() {
#ifdef MUT_NOTIFYING_EARLY
  d_step { LIVE; notifying-- }
#endif
  d_step { LIVE; wake++ }                                   /* fetch_add(release) */
  d_step { LIVE; asleep[0] = false; asleep[1] = false }     /* notify_all */
#ifndef MUT_NOTIFYING_EARLY
  d_step { LIVE; notifying-- }                              /* fetch_sub(release) */
#endif
}

/* The first half of reach(v): the lock section (always increasing here). */
inline reach_locked(v, must) {
  lock();
  d_step { LIVE; payload = v }                              /* seq_cst store */
#ifdef MUT_BEGIN_WAKE_UNLOCKED
  unlock();
  begin_wake(must);
#else
  begin_wake(must);
  unlock();
#endif
}

/* fail(e): the first error wins; no timepoints are registered here. */
inline fail(must) {
  lock();
  d_step { LIVE; failed = true }                            /* seq_cst store */
  begin_wake(must);
  unlock();
  if
  :: must -> end_wake()
  :: else -> skip
  fi;
  must = false
}

/* poll_parked(v) / poll_wait(v): the failure flag, then the payload. */
inline poll(v, over) {
  if
  :: failed -> over = true
  :: else -> over = false
  fi;
  if
  :: !over && payload >= v -> over = true
  :: else -> skip
  fi
}

/* wake_.wait_until(seen, max): returns once the word differs from seen. */
inline park_wait(me, seen) {
  do
  :: wake != seen -> break                                  /* user-space load */
  :: else ->
     d_step {                                               /* FUTEX_WAIT */
       if
       :: wake == seen -> asleep[me] = true
       :: else -> skip
       fi
     }
     !asleep[me]                                            /* until FUTEX_WAKE */
  od
}

/* wait(v) by waiter `me`. */
inline wait(me, v) {
  /* spin phase: zero or one poll_wait */
  if
  :: skip
  :: poll(v, over);
     if
     :: over -> goto waited
     :: else -> skip
     fi
  fi;
  /* park_until(v, max) */
#ifdef MUT_NO_PARKED_RECHECK
  poll(v, over);
  if
  :: over -> goto waited
  :: else -> skip
  fi;
  waiters++;                                                /* fetch_add */
  seen = wake;
  park_wait(me, seen);
  do
  :: true ->
     seen = wake;
     poll(v, over);
     if
     :: over -> break
     :: else -> park_wait(me, seen)
     fi
  od;
#else
  waiters++;                                                /* fetch_add, seq_cst */
  do
  :: true ->
#ifndef MUT_SEEN_LATE
     seen = wake;                                           /* acquire */
#endif
     poll(v, over);                                         /* poll_parked */
     if
     :: over -> break
     :: else -> skip
     fi;
#ifdef MUT_SEEN_LATE
     seen = wake;
#endif
     park_wait(me, seen)
  od;
#endif
  waiters--;                                                /* fetch_sub(relaxed) */
waited:
  seen = 0
}

/* ~basic_semaphore(), on the calling thread. */
inline destroy() {
  d_step { !locked -> locked = true };
  locked = false;                 /* take_all under the lock; fire_all */
#ifndef MUT_DTOR_NO_WAIT
  notifying == 0;                 /* while (notifying_ != 0) cpu_relax() */
#endif
  freed = true
}

#ifndef CALLBACK_DESTROYS

active proctype signaller() {
  bool must = false;
  /* reach(1), then reach(2) or fail(); no timepoints: end_wake, then an
   * empty fire_all */
  reach_locked(1, must);
  if
  :: must -> end_wake()
  :: else -> skip
  fi;
  must = false;
  if
  :: reach_locked(2, must);
     if
     :: must -> end_wake()
     :: else -> skip
     fi
  :: fail(must)
  fi
}

active proctype waiter_a() {
  byte seen;
  bool over;
  wait(0, 1);
  a_done = true
}

active proctype owner() {
  byte seen;
  bool over;
  wait(1, 2);
  a_done;                         /* host waiters return before destruction */
  destroy()
}

#else

active proctype signaller() {
  bool must = false, inner = false;
  /* reach(1): the timepoint on 1 is due */
  reach_locked(1, must);
#ifndef MUT_FIRE_BEFORE_END_WAKE
  if
  :: must -> end_wake()
  :: else -> skip
  fi;
#endif
  /* fire_all: the callback reaches 10, waits for A, destroys */
  reach_locked(10, inner);
  if
  :: inner -> end_wake()
  :: else -> skip
  fi;
  a_done;
  destroy();
#ifdef MUT_FIRE_BEFORE_END_WAKE
  if
  :: must -> end_wake()
  :: else -> skip
  fi
#endif
}

active proctype waiter_a() {
  byte seen;
  bool over;
  wait(0, 10);
  a_done = true
}

#endif
