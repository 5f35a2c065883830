/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera synchronisation commands: semaphores (SEM_WAIT,
 * SEM_WAIT_ABORT, SEM_SIGNAL, SEM_INC) with the modeled time of their
 * signals, TIMESTAMP and INTERRUPT.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include "tessera-internal.h"

/* Fixed latencies, in cycles. */
#define TSR_SEM_CYCLES 100
#define TSR_MISC_CYCLES 10

/*
 * How often a semaphore wait re-reads memory the CPU may have written
 * (the chip's own semaphore commands and remote writes wake it at once):
 * after 200 us, then twice as long each time, up to 10 ms, so that a
 * slice of many waiting queues does not spin the host.
 */
#define TSR_SEM_POLL_MIN_NS 200000
#define TSR_SEM_POLL_MAX_NS 10000000

/* ------------------------------------------------------- semaphores */

void tsr_core_set_sem_poll(TsrCore *core, uint64_t ns)
{
    core->sem_poll_ns = ns;
}

/* Semaphores and TIMESTAMP: no flags, and one 8-byte aligned address. */
static uint32_t va_command_check(const struct tsr_cmd_header *h, uint64_t va)
{
    if (h->flags) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (h->reserved) {
        return TSR_ERR_RESERVED;
    }
    if (va % 8) {
        return TSR_ERR_BAD_ALIGNMENT;
    }
    return TSR_ERR_NONE;
}

static uint32_t sem_check(const struct tsr_cmd_sem *c)
{
    return va_command_check(&c->hdr, c->va);
}

static uint32_t current_epoch(TsrCore *core)
{
    uint32_t epoch;

    pthread_mutex_lock(&core->lock);
    epoch = core->epoch;
    pthread_mutex_unlock(&core->lock);
    return epoch;
}

/* The sem_times entry of (@context, @va) this epoch, or -1; sem_lock held. */
static int sem_time_find(TsrCore *core, uint32_t epoch, uint32_t context,
                         uint64_t va)
{
    int i;

    for (i = 0; i < TSR_SEM_TIMES; i++) {
        if (core->sem_times[i].epoch == epoch &&
            core->sem_times[i].context == context &&
            core->sem_times[i].va == va) {
            return i;
        }
    }
    return -1;
}

static bool signal_before(uint64_t cycle, uint64_t add, uint64_t cycle2,
                          uint64_t add2)
{
    return cycle < cycle2 || (cycle == cycle2 && add < add2);
}

void tsr_sem_time_record_locked(TsrCore *core, uint32_t context,
                                uint64_t va, bool set, uint64_t add,
                                uint64_t cycle)
{
    uint32_t epoch = current_epoch(core);
    int i = sem_time_find(core, epoch, context, va);
    unsigned int k, n;
    TsrSemSignal *s;

    if (i < 0) {
        i = core->sem_times_next++ % TSR_SEM_TIMES;
        core->sem_times[i].epoch = epoch;
        core->sem_times[i].context = context;
        core->sem_times[i].va = va;
        core->sem_times[i].count = 0;
    }
    if (set) {
        /* What came before no longer counts. */
        core->sem_times[i].count = 0;
    }
    __atomic_add_fetch(&core->sem_signals, 1, __ATOMIC_RELEASE);
    /*
     * In modeled order (ties by what they added), the earliest dropped
     * when full: which ones are kept does not depend on the order the
     * host recorded them in.
     */
    n = core->sem_times[i].count;
    s = core->sem_times[i].signal;
    if (n == TSR_SEM_HISTORY) {
        if (signal_before(cycle, add, s[0].cycle, s[0].add)) {
            return;
        }
        memmove(&s[0], &s[1], --n * sizeof(s[0]));
    }
    for (k = n; k > 0 && signal_before(cycle, add, s[k - 1].cycle,
                                       s[k - 1].add); k--) {
        s[k] = s[k - 1];
    }
    s[k].add = add;
    s[k].cycle = cycle;
    core->sem_times[i].count = n + 1;
}

/*
 * The modeled time at which (@context, @va), now @value, first held at
 * least @target, from the signals remembered: taken in modeled order,
 * the earliest after which the value, less every later signal's addition,
 * is still @target or more.  0 if signals not remembered (or the CPU's
 * writes) made it so.  Host threads may run the signals in any order; the
 * answer does not depend on it.  False if a signal was recorded since
 * @signals (core->sem_signals before @value was read): @value may not
 * count it, and the answer would time the value by it.
 */
static bool sem_time_reached(TsrCore *core, uint32_t context, uint64_t va,
                             uint64_t signals, uint64_t value,
                             uint64_t target, uint64_t *when)
{
    uint32_t epoch = current_epoch(core);
    TsrSemSignal s[TSR_SEM_HISTORY];
    uint64_t later = 0;
    unsigned int n = 0, k;
    int i;

    pthread_mutex_lock(&core->sem_lock);
    if (core->sem_signals != signals) {
        pthread_mutex_unlock(&core->sem_lock);
        return false;
    }
    i = sem_time_find(core, epoch, context, va);
    if (i >= 0) {
        n = core->sem_times[i].count;
        memcpy(s, core->sem_times[i].signal, n * sizeof(s[0]));
    }
    pthread_mutex_unlock(&core->sem_lock);
    *when = 0;
    if (!n) {
        return true;
    }
    /* After the last signal the value is @value, at least @target. */
    *when = s[n - 1].cycle;
    for (k = n - 1; k > 0; k--) {
        later = s[k].add > UINT64_MAX - later ? UINT64_MAX : later + s[k].add;
        if (later > value || value - later < target) {
            return true;
        }
        *when = s[k - 1].cycle;
    }
    later = s[0].add > UINT64_MAX - later ? UINT64_MAX : later + s[0].add;
    if (later <= value && value - later >= target) {
        *when = 0;
    }
    return true;
}

uint32_t tsr_cmd_sem_update(TsrMem *mem, const struct tsr_cmd_sem *c,
                            bool add, TsrCost *cost)
{
    TsrCore *core = mem->core;
    uint32_t err = sem_check(c);
    uint64_t v;

    if (err) {
        return err;
    }
    pthread_mutex_lock(&core->sem_lock);
    if (add && tsr_mem_read(mem, c->va, &v, sizeof(v)) == 0) {
        v = htole64(le64toh(v) + c->value);
    } else {
        v = htole64(c->value);
    }
    cost->other += TSR_SEM_CYCLES;
    if (!mem->error) {
        tsr_mem_write(mem, c->va, &v, sizeof(v));
    }
    if (!mem->error) {
        tsr_sem_time_record_locked(core, mem->context, c->va, !add, c->value,
                                   tsr_cost_now(cost));
    }
    pthread_mutex_unlock(&core->sem_lock);
    tsr_core_wake_sem(core, mem->context, c->va);
    return mem->error;
}

/*
 * Sleep until @w is woken or @poll_ns have passed; false on the timeout.
 * Not at all if it was woken since it last looked.
 */
static bool sem_sleep(TsrCore *core, TsrSemWaiter *w, uint64_t poll_ns)
{
    struct timespec until;
    bool woken;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += poll_ns / 1000000000;
    until.tv_nsec += poll_ns % 1000000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_nsec -= 1000000000;
        until.tv_sec++;
    }
    pthread_mutex_lock(&core->wake_lock);
    w->sleeping = true;
    while (!w->woken) {
        if (pthread_cond_timedwait(&w->cond, &core->wake_lock, &until) ==
            ETIMEDOUT) {
            break;
        }
    }
    w->sleeping = false;
    woken = w->woken;
    w->woken = false;
    pthread_mutex_unlock(&core->wake_lock);
    return woken;
}

void tsr_core_sem_waiter(TsrCore *core, unsigned int queue, bool *sleeping,
                         uint64_t *wakeups)
{
    *sleeping = false;
    *wakeups = 0;
    if (queue < TSR_MAX_QUEUES) {
        pthread_mutex_lock(&core->wake_lock);
        *sleeping = core->sem_waiter[queue].sleeping;
        *wakeups = core->sem_waiter[queue].wakeups;
        pthread_mutex_unlock(&core->wake_lock);
    }
}

/*
 * Wait until the semaphore at @va is >= @value, or, with an @abort_va,
 * fail once the semaphore there is not zero, or with @links once a wired
 * port is not up; on the queue's own condition, which a signal of either
 * semaphore (or any signal in another context, tsr_core_wake_sem()), a
 * port's change of state, a reset or a fatal error wakes.
 */
static uint32_t sem_wait_loop(TsrMem *mem, uint64_t va, uint64_t value,
                              uint64_t abort_va, bool links, TsrCost *cost)
{
    TsrCore *core = mem->core;
    uint64_t poll_ns = core->sem_poll_ns ? core->sem_poll_ns :
                       TSR_SEM_POLL_MIN_NS;
    uint64_t poll_max = core->sem_poll_ns ? core->sem_poll_ns :
                        TSR_SEM_POLL_MAX_NS;
    uint64_t v, signals, signalled, epochs = UINT64_MAX;
    uint32_t err;

    for (;;) {
        if (abort_va) {
            if (tsr_mem_read(mem, abort_va, &v, sizeof(v))) {
                return mem->error;
            }
            if (v) {
                return TSR_ERR_PEER_ABORT;
            }
        }
        if (links && core->ici && tsr_ici_links_down(core->ici, &epochs)) {
            return TSR_ERR_LINK_DOWN;
        }
        signals = __atomic_load_n(&core->sem_signals, __ATOMIC_ACQUIRE);
        if (tsr_mem_read(mem, va, &v, sizeof(v))) {
            return mem->error;
        }
        if (le64toh(v) >= value) {
            /* Signals from other queues end the wait at their own time. */
            if (!sem_time_reached(core, mem->context, va, signals,
                                  le64toh(v), value, &signalled)) {
                continue;   /* one landed since the read: read again */
            }
            if (signalled > tsr_cost_now(cost)) {
                cost->other += signalled - tsr_cost_now(cost);
            }
            return TSR_ERR_NONE;
        }
        if (tsr_mem_aborted(mem)) {
            return TSR_ERR_ABORTED;
        }
        /* What it waits for may hang on a write that failed meanwhile. */
        err = tsr_ici_check(mem);
        if (err) {
            return err;
        }
        /* Woken by a signal, or re-read for the CPU's. */
        if (!sem_sleep(core, &core->sem_waiter[mem->queue], poll_ns)) {
            poll_ns = tsr_min(2 * poll_ns, poll_max);
        }
    }
}

static uint32_t sem_wait(TsrMem *mem, uint64_t va, uint64_t value,
                         uint64_t abort_va, bool links, TsrCost *cost)
{
    TsrCore *core = mem->core;
    TsrSemWaiter *w;
    uint32_t err;

    cost->other += TSR_SEM_CYCLES;
    /* Commands run on the hardware queues only. */
    assert(mem->queue < TSR_MAX_QUEUES);
    w = &core->sem_waiter[mem->queue];
    pthread_mutex_lock(&core->wake_lock);
    w->waiting = true;
    w->woken = false;
    w->context = mem->context;
    w->va = va;
    w->abort_va = abort_va;
    pthread_mutex_unlock(&core->wake_lock);
    err = sem_wait_loop(mem, va, value, abort_va, links, cost);
    pthread_mutex_lock(&core->wake_lock);
    w->waiting = false;
    pthread_mutex_unlock(&core->wake_lock);
    return err;
}

uint32_t tsr_cmd_sem_wait(TsrMem *mem, const struct tsr_cmd_sem *c,
                          TsrCost *cost)
{
    uint32_t err = sem_check(c);

    return err ? err : sem_wait(mem, c->va, c->value, 0, false, cost);
}

uint32_t tsr_cmd_sem_wait_abort(TsrMem *mem,
                                const struct tsr_cmd_sem_wait_abort *c,
                                TsrCost *cost)
{
    struct tsr_cmd_header h = c->hdr;
    uint32_t err;

    h.flags &= ~TSR_SEM_WAIT_LINKS;
    err = va_command_check(&h, c->va);
    /* Address 0 is an address like any other: unmapped, it faults. */
    if (!err && c->abort_va % 8) {
        err = TSR_ERR_BAD_ALIGNMENT;
    }
    return err ? err : sem_wait(mem, c->va, c->value, c->abort_va,
                                c->hdr.flags & TSR_SEM_WAIT_LINKS, cost);
}

/* ----------------------------------------------- timestamp, interrupt */

uint32_t tsr_cmd_timestamp(TsrMem *mem, const struct tsr_cmd_timestamp *c,
                           TsrCost *cost)
{
    uint32_t err = va_command_check(&c->hdr, c->va);
    uint64_t now;

    if (err) {
        return err;
    }
    cost->other += TSR_MISC_CYCLES;
    now = htole64(tsr_cost_now(cost));
    tsr_mem_write(mem, c->va, &now, sizeof(now));
    return mem->error;
}

uint32_t tsr_cmd_interrupt(TsrMem *mem, const struct tsr_cmd_header *c,
                           TsrCost *cost)
{
    TsrCore *core = mem->core;
    TsrQueue *qu = &core->queue[mem->queue];
    bool raise = false;

    if (c->flags) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (c->reserved) {
        return TSR_ERR_RESERVED;
    }
    pthread_mutex_lock(&core->lock);
    /* A job a reset aborted raises nothing any more. */
    if (qu->generation == mem->generation) {
        qu->irq_status |= TSR_QIRQ_USER;
        raise = qu->irq_enable & TSR_QIRQ_USER;
    }
    pthread_mutex_unlock(&core->lock);
    if (raise) {
        tsr_core_irq(core, TSR_MSIX_VEC_QUEUE(mem->queue));
    }
    cost->other += TSR_MISC_CYCLES;
    return TSR_ERR_NONE;
}
