/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera ICI shared-memory transport (see tessera-ring.h).
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tessera-ring.h"

#define HDR TSR_ICI_RING_HDR_SIZE

_Static_assert(sizeof(struct tsr_ici_ring_hdr) <= HDR,
               "a ring's header fits its page");

struct TsrRing {
    struct tsr_ici_ring_hdr *hdr;
    uint8_t *data;              /* @size bytes, mirrored right after */
    uint8_t *map;               /* the whole mapping */
    size_t map_len;
    int fd;
    uint64_t size;
    /* This side's own count: head as producer, tail as consumer. */
    uint64_t count;
    /*
     * Producer: bytes [keep, keep_end) are kept (tsr_ring_commit()), not
     * to be written over, whatever the consumer has read; none if equal.
     */
    uint64_t keep;
    uint64_t keep_end;
    unsigned int holds;         /* producer: tsr_ring_hold() */
    bool broken;
};

static bool size_valid(uint32_t size)
{
    return size >= TSR_ICI_RING_MIN && size <= TSR_ICI_RING_MAX &&
           !(size & (size - 1));
}

/*
 * Map @fd's header and data, then the data again right behind it: a run
 * of bytes that wraps is contiguous in the mirror.
 */
static TsrRing *ring_map(int fd, uint32_t size)
{
    TsrRing *r = calloc(1, sizeof(*r));
    uint8_t *base;

    if (!r) {
        return NULL;
    }
    r->map_len = HDR + 2 * (size_t)size;
    base = mmap(NULL, r->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
                -1, 0);
    if (base == MAP_FAILED) {
        free(r);
        return NULL;
    }
    if (mmap(base, HDR + (size_t)size, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
        mmap(base + HDR + size, size, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_FIXED, fd, HDR) == MAP_FAILED) {
        munmap(base, r->map_len);
        free(r);
        return NULL;
    }
    r->map = base;
    r->hdr = (struct tsr_ici_ring_hdr *)base;
    r->data = base + HDR;
    r->size = size;
    r->fd = fd;
    return r;
}

TsrRing *tsr_ring_create(uint32_t size, int *fd)
{
    TsrRing *r;
    int f;

    if (!size_valid(size)) {
        errno = EINVAL;
        return NULL;
    }
    f = memfd_create("tessera-ici-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (f < 0) {
        return NULL;
    }
    /* Sealed, the peer can trust that the file never shrinks under it. */
    if (ftruncate(f, HDR + (off_t)size) ||
        fcntl(f, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
        close(f);
        return NULL;
    }
    r = ring_map(f, size);
    if (!r) {
        close(f);
        return NULL;
    }
    r->hdr->magic = TSR_ICI_RING_MAGIC;
    r->hdr->size = size;
    *fd = f;
    return r;
}

TsrRing *tsr_ring_open(int fd, uint32_t size, const char **why)
{
    const int seals = F_SEAL_SHRINK | F_SEAL_GROW;
    struct stat st;
    TsrRing *r;

    *why = NULL;
    if (!size_valid(size)) {
        *why = "its size is not a power of two of 64 KiB to 64 MiB";
    } else if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
               st.st_size != HDR + (off_t)size) {
        *why = "its file is not a memfd of the size its HELLO gives";
    } else if ((fcntl(fd, F_GET_SEALS) & seals) != seals) {
        *why = "its memfd is not sealed against shrinking and growing";
    }
    if (*why) {
        close(fd);
        return NULL;
    }
    r = ring_map(fd, size);
    if (!r) {
        *why = "it cannot be mapped";
        close(fd);
        return NULL;
    }
    if (__atomic_load_n(&r->hdr->magic, __ATOMIC_RELAXED) !=
        TSR_ICI_RING_MAGIC ||
        __atomic_load_n(&r->hdr->size, __ATOMIC_RELAXED) != size) {
        *why = "its header is not a ring's of that size";
        tsr_ring_free(r);
        return NULL;
    }
    /* Start where the producer is: what came before is not ours. */
    r->count = __atomic_load_n(&r->hdr->tail, __ATOMIC_RELAXED);
    if (__atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE) - r->count > size) {
        *why = "its counts are more than its size apart";
        tsr_ring_free(r);
        return NULL;
    }
    return r;
}

void tsr_ring_free(TsrRing *r)
{
    if (!r) {
        return;
    }
    munmap(r->map, r->map_len);
    close(r->fd);
    free(r);
}

int tsr_ring_fd(const TsrRing *r)
{
    return r->fd;
}

bool tsr_ring_broken(const TsrRing *r)
{
    return r->broken;
}

/* ----------------------------------------------------------- producer */

/*
 * Bytes free, from the consumer's tail read once (0 if it is a lie), and
 * short of the kept ones, whatever the tail says.
 */
static uint64_t room(TsrRing *r)
{
    uint64_t tail = __atomic_load_n(&r->hdr->tail, __ATOMIC_ACQUIRE);
    uint64_t used = r->count - tail;

    if (used > r->size) {
        r->broken = true;
        return 0;
    }
    if (r->keep != r->keep_end && r->count - r->keep > used) {
        used = r->count - r->keep;
    }
    return r->size - used;
}

/* Show the consumer all that was written, unless held. */
static void publish(TsrRing *r)
{
    if (!r->holds) {
        __atomic_store_n(&r->hdr->head, r->count, __ATOMIC_RELEASE);
    }
}

size_t tsr_ring_write(TsrRing *r, const void *buf, size_t len)
{
    uint64_t n;

    if (r->broken) {
        return 0;
    }
    n = room(r);
    n = n < len ? n : len;
    if (!n) {
        return 0;
    }
    memcpy(r->data + (r->count & (r->size - 1)), buf, n);
    r->count += n;
    publish(r);
    return n;
}

uint8_t *tsr_ring_reserve(TsrRing *r, size_t len)
{
    if (r->broken || !len || room(r) < len) {
        return NULL;
    }
    return r->data + (r->count & (r->size - 1));
}

uint64_t tsr_ring_commit(TsrRing *r, size_t len, bool keep)
{
    uint64_t pos = r->count;

    if (keep) {
        if (r->keep == r->keep_end) {
            r->keep = pos;
        }
        r->keep_end = pos + len;
    }
    r->count += len;
    publish(r);
    return pos;
}

void tsr_ring_hold(TsrRing *r)
{
    r->holds++;
}

/*
 * The release store of the head orders the bytes a holder wrote before
 * it: another thread's, when their unholds are serialised by a lock.
 */
void tsr_ring_unhold(TsrRing *r)
{
    if (r->holds && !--r->holds) {
        publish(r);
    }
}

const uint8_t *tsr_ring_kept(TsrRing *r, uint64_t pos, size_t len)
{
    if (pos < r->keep || pos > r->keep_end || len > r->keep_end - pos) {
        return NULL;
    }
    return r->data + (pos & (r->size - 1));
}

void tsr_ring_release(TsrRing *r, uint64_t pos)
{
    if (pos > r->keep_end) {
        pos = r->keep_end;
    }
    if (pos > r->keep) {
        r->keep = pos;
    }
}

/*
 * Whether the other side's @flag was set; cleared if so.  The full fence
 * orders this side's count, stored before, against the flag's load, as
 * the other side orders its flag against its load of the count (see
 * wait_for()): one of the two sees the other.
 */
static bool take_flag(uint32_t *flag)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!__atomic_load_n(flag, __ATOMIC_RELAXED)) {
        return false;
    }
    return __atomic_exchange_n(flag, 0, __ATOMIC_ACQ_REL) != 0;
}

/* Set @flag, then look again whether @ready() holds; if it does, unset. */
static bool wait_for(TsrRing *r, uint32_t *flag, bool (*ready)(TsrRing *))
{
    __atomic_store_n(flag, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!ready(r)) {
        return false;
    }
    __atomic_store_n(flag, 0, __ATOMIC_RELAXED);
    return true;
}

bool tsr_ring_data_doorbell(TsrRing *r)
{
    return !r->broken && !r->holds && take_flag(&r->hdr->consumer_waiting);
}

static bool has_room(TsrRing *r)
{
    return room(r) > 0 || r->broken;
}

bool tsr_ring_wait_room(TsrRing *r)
{
    return wait_for(r, &r->hdr->producer_waiting, has_room);
}

/* ----------------------------------------------------------- consumer */

const uint8_t *tsr_ring_peek(TsrRing *r, size_t *len)
{
    uint64_t head = __atomic_load_n(&r->hdr->head, __ATOMIC_ACQUIRE);
    uint64_t avail = head - r->count;

    *len = 0;
    if (r->broken || avail > r->size) {
        r->broken = true;
        return NULL;
    }
    *len = avail;
    return r->data + (r->count & (r->size - 1));
}

void tsr_ring_consume(TsrRing *r, size_t n)
{
    r->count += n;
    __atomic_store_n(&r->hdr->tail, r->count, __ATOMIC_RELEASE);
}

bool tsr_ring_room_doorbell(TsrRing *r)
{
    return !r->broken && take_flag(&r->hdr->producer_waiting);
}

static bool has_data(TsrRing *r)
{
    size_t n;

    return !tsr_ring_peek(r, &n) || n > 0;
}

bool tsr_ring_wait_data(TsrRing *r)
{
    return wait_for(r, &r->hdr->consumer_waiting, has_data);
}

/* ------------------------------------------------------ futex doorbells */

/* Shared: the word is in the memfd both processes map. */
static void futex_wake(uint32_t *word, int op)
{
    syscall(SYS_futex, word, op, 1, NULL, NULL, 0);
}

void tsr_ring_wake_data(TsrRing *r)
{
    futex_wake(&r->hdr->consumer_waiting, FUTEX_WAKE);
}

void tsr_ring_wake_room(TsrRing *r)
{
    futex_wake(&r->hdr->producer_waiting, FUTEX_WAKE);
}

void tsr_ring_kick(uint32_t *ctl)
{
    __atomic_fetch_add(ctl, 1, __ATOMIC_RELEASE);
    futex_wake(ctl, FUTEX_WAKE_PRIVATE);
}

bool tsr_ring_futex_works(void)
{
    /* No waiters is invalid, but only where the call exists. */
    return syscall(SYS_futex_waitv, NULL, 0, 0, NULL, 0) < 0 &&
           errno != ENOSYS;
}

static uint64_t now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000ull + t.tv_nsec;
}

/*
 * After a wake-up: a ring whose word woke us, or was cleared, with no
 * bytes to show was rung for nothing (a correct producer clears the word
 * after its head is out, and wakes after clearing it).
 */
static void count_futile(TsrRingWatch *w, bool woken, uint64_t now)
{
    uint32_t word = __atomic_load_n(&w->ring->hdr->consumer_waiting,
                                    __ATOMIC_ACQUIRE);
    size_t len;

    if (!woken && word == 1) {
        return;
    }
    if (!tsr_ring_peek(w->ring, &len) || len) {
        w->futile = 0;
        return;
    }
    w->futile_wakeups++;
    if (++w->futile >= TSR_RING_FUTILE_MAX) {
        w->futile = 0;
        w->quiet_until = now + TSR_RING_QUIET_NS;
    }
}

void tsr_ring_sleep(TsrRingWatch *w, unsigned int n, const uint32_t *ctl,
                    uint32_t ctl_val, uint64_t timeout_ns)
{
    struct futex_waitv v[FUTEX_WAITV_MAX];
    unsigned int at[FUTEX_WAITV_MAX];
    uint64_t now = now_ns(), end;
    unsigned int i, k = 0;
    struct timespec ts;
    long woke;

    for (i = 0; i < n && k < FUTEX_WAITV_MAX - 1; i++) {
        if (!w[i].ring) {
            continue;
        }
        if (w[i].quiet_until > now) {
            if (timeout_ns > TSR_RING_POLL_NS) {
                timeout_ns = TSR_RING_POLL_NS;
            }
            continue;
        }
        if (tsr_ring_wait_data(w[i].ring)) {
            return;
        }
        v[k] = (struct futex_waitv){
            .val = 1,
            .uaddr = (uintptr_t)&w[i].ring->hdr->consumer_waiting,
            .flags = FUTEX_32,
        };
        at[k++] = i;
    }
    v[k] = (struct futex_waitv){
        .val = ctl_val,
        .uaddr = (uintptr_t)ctl,
        .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG,
    };
    end = now + timeout_ns;
    ts = (struct timespec){ .tv_sec = end / 1000000000ull,
                            .tv_nsec = end % 1000000000ull };
    woke = syscall(SYS_futex_waitv, v, k + 1, 0, &ts, CLOCK_MONOTONIC);
    now = now_ns();
    for (i = 0; i < k; i++) {
        count_futile(&w[at[i]], woke == i, now);
    }
}
