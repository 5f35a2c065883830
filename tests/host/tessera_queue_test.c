// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the Tessera command processor and device MMU: jobs
 * through real rings, completion records, fences, interrupts, faults, and
 * the DMA, semaphore, timestamp and interrupt commands.
 */
#include <math.h>

#include "kselftest_harness.h"

#include "tessera_chip.h"

FIXTURE(q) {
	struct test_chip *c;
};

FIXTURE_SETUP(q)
{
	self->c = chip_new("v4");
}

FIXTURE_TEARDOWN(q)
{
	chip_free(self->c);
}

static const struct tsr_cmd_header nop = {
	.opcode = TSR_OP_NOP, .size_qw = 1,
};

TEST_F(q, a_nop_job_completes_with_record_fence_and_interrupt)
{
	uint64_t *fence = host_ptr(self->c, FENCE_ADDR(0));
	uint32_t kicks = self->c->kicks[0];
	struct tsr_completion *comp;

	comp = chip_queue_job(self->c, 0, 1, &nop, sizeof(nop), 77);
	EXPECT_EQ(kicks + 1, self->c->kicks[0]);
	EXPECT_EQ(TSR_QSTATUS_RUNNING, qrd(self->c, 0, TSR_QREG_STATUS));
	tsr_core_queue_run(self->c->core, 0);

	EXPECT_EQ(TSR_JOB_STATUS_DONE, comp->status);
	EXPECT_EQ(TSR_ERR_NONE, comp->error);
	EXPECT_EQ(77, comp->fence);
	EXPECT_LT(comp->start_cycle, comp->end_cycle);
	EXPECT_EQ(77, *fence);
	EXPECT_EQ(77, qrd(self->c, 0, TSR_QREG_FENCE_LO));
	EXPECT_EQ(1, qrd(self->c, 0, TSR_QREG_HEAD));
	EXPECT_EQ(1, qrd(self->c, 0, TSR_QREG_JOBS_DONE));
	EXPECT_EQ(TSR_QSTATUS_IDLE, qrd(self->c, 0, TSR_QREG_STATUS));
	EXPECT_EQ(TSR_QIRQ_JOB_DONE, qrd(self->c, 0, TSR_QREG_IRQ_STATUS));
	EXPECT_EQ(1, self->c->irqs[TSR_MSIX_VEC_QUEUE(0)]);
	EXPECT_EQ(0, self->c->irqs[TSR_MSIX_VEC_QUEUE(1)]);
}

TEST_F(q, jobs_run_in_order_and_the_clock_moves_forward)
{
	struct tsr_completion *a, *b;

	a = chip_queue_job(self->c, 0, 1, &nop, sizeof(nop), 1);
	b = chip_queue_job(self->c, 0, 1, &nop, sizeof(nop), 2);
	tsr_core_queue_run(self->c->core, 0);
	EXPECT_EQ(TSR_JOB_STATUS_DONE, a->status);
	EXPECT_EQ(TSR_JOB_STATUS_DONE, b->status);
	EXPECT_LE(a->end_cycle, b->start_cycle);
	EXPECT_EQ(2, qrd(self->c, 0, TSR_QREG_FENCE_LO));
	EXPECT_LE(b->end_cycle, rd(self->c, TSR_REG_CLOCK_LO));
}

TEST_F(q, a_bad_opcode_fails_the_job_at_its_index_and_the_queue_goes_on)
{
	struct tsr_cmd_header cmds[3] = { nop, nop, { .opcode = 0x7f, .size_qw = 1 } };
	struct tsr_completion *bad, *next;

	bad = chip_queue_job(self->c, 0, 1, cmds, sizeof(cmds), 5);
	next = chip_queue_job(self->c, 0, 1, &nop, sizeof(nop), 6);
	tsr_core_queue_run(self->c->core, 0);

	EXPECT_EQ(TSR_JOB_STATUS_ERROR, bad->status);
	EXPECT_EQ(TSR_ERR_BAD_OPCODE, bad->error);
	EXPECT_EQ(2, bad->failed_cmd);
	EXPECT_EQ(TSR_JOB_STATUS_DONE, next->status);
	EXPECT_EQ(1, qrd(self->c, 0, TSR_QREG_JOBS_FAILED));
	EXPECT_EQ(TSR_ERR_BAD_OPCODE, qrd(self->c, 0, TSR_QREG_LAST_ERROR));
	EXPECT_EQ(TSR_QIRQ_JOB_ERROR | TSR_QIRQ_JOB_DONE,
		  qrd(self->c, 0, TSR_QREG_IRQ_STATUS));
}

TEST_F(q, command_size_and_reserved_fields_are_checked)
{
	struct tsr_cmd_header bad_size = { .opcode = TSR_OP_NOP, .size_qw = 2 };
	struct tsr_cmd_header reserved = nop;
	struct tsr_cmd_header flags = nop;
	uint64_t two[2] = { 0 };

	memcpy(two, &bad_size, sizeof(bad_size));
	EXPECT_EQ(TSR_ERR_BAD_SIZE, chip_run(self->c, two, sizeof(two))->error);
	bad_size.size_qw = 0;
	EXPECT_EQ(TSR_ERR_BAD_SIZE,
		  chip_run(self->c, &bad_size, sizeof(bad_size))->error);
	reserved.reserved = 1;
	EXPECT_EQ(TSR_ERR_RESERVED,
		  chip_run(self->c, &reserved, sizeof(reserved))->error);
	flags.flags = 1;
	EXPECT_EQ(TSR_ERR_BAD_FLAGS, chip_run(self->c, &flags, sizeof(flags))->error);
}

TEST_F(q, a_job_in_an_unknown_context_fails_before_its_first_command)
{
	struct tsr_completion *comp;

	comp = chip_queue_job(self->c, 0, 1, &nop, sizeof(nop), 9);
	/* Point the descriptor at context 7, which has no page tables. */
	((struct tsr_job_desc *)host_ptr(self->c, RING_ADDR))[0].context = 7;
	tsr_core_queue_run(self->c->core, 0);
	/* The record cannot be written without a context; the queue says. */
	EXPECT_EQ(0, comp->status);
	EXPECT_EQ(1, qrd(self->c, 0, TSR_QREG_JOBS_FAILED));
	EXPECT_EQ(TSR_ERR_BAD_CONTEXT, qrd(self->c, 0, TSR_QREG_LAST_ERROR));
	EXPECT_EQ(9, *(uint64_t *)host_ptr(self->c, FENCE_ADDR(0)));
}

TEST_F(q, descriptor_reserved_fields_fail_the_job)
{
	struct tsr_completion *comp;

	comp = chip_queue_job(self->c, 0, 1, &nop, sizeof(nop), 9);
	((struct tsr_job_desc *)host_ptr(self->c, RING_ADDR))[0].reserved[1] = 1;
	tsr_core_queue_run(self->c->core, 0);
	EXPECT_EQ(TSR_ERR_BAD_JOB, comp->error);
	EXPECT_EQ(TSR_NO_COMMAND, comp->failed_cmd);
}

static struct tsr_cmd_dma copy_cmd(uint64_t src, uint64_t dst, uint32_t bytes)
{
	return (struct tsr_cmd_dma){
		.hdr = HDR(TSR_OP_DMA_COPY, struct tsr_cmd_dma),
		.src = src, .dst = dst, .size = { bytes, 1, 1 },
	};
}

TEST_F(q, dma_copies_between_system_memory_and_hbm)
{
	uint64_t src = chip_buffer(self->c, 1, 3 * 4096);
	uint64_t back = chip_buffer(self->c, 1, 3 * 4096);
	uint64_t hbm_va = 0x10000000;
	struct tsr_cmd_dma cmds[2];
	struct tsr_completion *comp;
	unsigned int i;

	chip_map(self->c, 1, hbm_va, 0x20000, 3 * 4096,
		 TSR_PTE_READ | TSR_PTE_WRITE | TSR_PTE_HBM);
	for (i = 0; i < 3 * 4096; i++)
		((uint8_t *)host_ptr(self->c, src))[i] = i * 7;
	cmds[0] = copy_cmd(src + 5, hbm_va + 3, 3 * 4096 - 10);
	cmds[1] = copy_cmd(hbm_va + 3, back + 5, 3 * 4096 - 10);
	comp = chip_run(self->c, cmds, sizeof(cmds));

	ASSERT_EQ(TSR_ERR_NONE, comp->error);
	EXPECT_EQ(0, memcmp(self->c->hbm + 0x20000 + 3,
			    host_ptr(self->c, src + 5), 3 * 4096 - 10));
	EXPECT_EQ(0, memcmp(host_ptr(self->c, back + 5),
			    host_ptr(self->c, src + 5), 3 * 4096 - 10));
	EXPECT_EQ(0, ((uint8_t *)host_ptr(self->c, back))[4]);
	EXPECT_LT(0, comp->dma_cycles);
}

TEST_F(q, dma_follows_three_dimensional_strides)
{
	uint64_t src = chip_buffer(self->c, 1, 4096);
	uint64_t dst = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_dma c = copy_cmd(src, dst, 4);
	uint8_t *s = host_ptr(self->c, src), *d = host_ptr(self->c, dst);
	unsigned int p, r, b;

	for (b = 0; b < 4096; b++)
		s[b] = b;
	c.size[1] = 3;
	c.size[2] = 2;
	c.src_stride[0] = 10;
	c.src_stride[1] = 100;
	c.dst_stride[0] = 4;
	c.dst_stride[1] = 12;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &c, sizeof(c))->error);
	for (p = 0; p < 2; p++)
		for (r = 0; r < 3; r++)
			for (b = 0; b < 4; b++)
				ASSERT_EQ(s[p * 100 + r * 10 + b], d[p * 12 + r * 4 + b]);
	EXPECT_EQ(0, d[24]);
}

TEST_F(q, dma_fill_writes_the_pattern)
{
	uint64_t dst = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_dma c = {
		.hdr = HDR(TSR_OP_DMA_FILL, struct tsr_cmd_dma),
		.src = 0xa1b2c3d4, .dst = dst + 8, .size = { 16, 1, 1 },
	};
	uint32_t *d = host_ptr(self->c, dst);

	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &c, sizeof(c))->error);
	EXPECT_EQ(0, d[1]);
	EXPECT_EQ(0xa1b2c3d4, d[2]);
	EXPECT_EQ(0xa1b2c3d4, d[5]);
	EXPECT_EQ(0, d[6]);
}

TEST_F(q, dma_fields_are_validated)
{
	uint64_t buf = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_dma c = copy_cmd(buf, buf + 2048, 16);

	c.size[2] = 0;
	EXPECT_EQ(TSR_ERR_BAD_SHAPE, chip_run(self->c, &c, sizeof(c))->error);
	c = copy_cmd(buf, buf + 2048, 16);
	c.size[1] = 2;
	c.dst_stride[0] = 8;
	EXPECT_EQ(TSR_ERR_BAD_STRIDE, chip_run(self->c, &c, sizeof(c))->error);
	c = copy_cmd(buf, buf + 2048, 16);
	c.reserved = 1;
	EXPECT_EQ(TSR_ERR_RESERVED, chip_run(self->c, &c, sizeof(c))->error);
	c = copy_cmd(buf, buf + 2048, 16);
	c.hdr.flags = 4;
	EXPECT_EQ(TSR_ERR_BAD_FLAGS, chip_run(self->c, &c, sizeof(c))->error);
	c = copy_cmd(buf, buf + 2048, 16);
	c.hdr.opcode = TSR_OP_DMA_FILL;
	c.src = 1ull << 32;
	EXPECT_EQ(TSR_ERR_RESERVED, chip_run(self->c, &c, sizeof(c))->error);
	c.src = 0;
	c.size[0] = 6;
	EXPECT_EQ(TSR_ERR_BAD_SHAPE, chip_run(self->c, &c, sizeof(c))->error);
}

TEST_F(q, an_unmapped_address_faults_with_the_address_and_touches_nothing)
{
	uint64_t buf = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_dma c = copy_cmd(buf, 0x7000000000ull + 0x123, 16);
	struct tsr_completion *comp;

	wr(self->c, TSR_REG_IRQ_ENABLE, TSR_IRQ_MMU_FAULT);
	comp = chip_run(self->c, &c, sizeof(c));
	EXPECT_EQ(TSR_ERR_MMU_UNMAPPED, comp->error);
	EXPECT_EQ(0, comp->failed_cmd);
	EXPECT_EQ(0x7000000000ull + 0x123, comp->fault_va);
	EXPECT_EQ(1, rd(self->c, TSR_REG_MMU_FAULT_CONTEXT));
	EXPECT_EQ(0x123, rd(self->c, TSR_REG_MMU_FAULT_VA_LO));
	EXPECT_EQ(0x70, rd(self->c, TSR_REG_MMU_FAULT_VA_HI));
	EXPECT_EQ(TSR_ERR_MMU_UNMAPPED, rd(self->c, TSR_REG_MMU_FAULT_REASON));
	EXPECT_EQ(1, rd(self->c, TSR_REG_MMU_FAULT_COUNT));
	EXPECT_EQ(TSR_IRQ_MMU_FAULT, rd(self->c, TSR_REG_IRQ_STATUS));
	EXPECT_EQ(1, self->c->irqs[TSR_MSIX_VEC_DEVICE]);
}

TEST_F(q, vas_beyond_39_bits_fault)
{
	uint64_t buf = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_dma c = copy_cmd(buf, 1ull << 39, 16);

	EXPECT_EQ(TSR_ERR_MMU_UNMAPPED, chip_run(self->c, &c, sizeof(c))->error);
}

TEST_F(q, a_read_only_page_refuses_writes)
{
	uint64_t buf = chip_buffer(self->c, 1, 4096);
	uint64_t ro = 0x20000000;
	struct tsr_cmd_dma c = copy_cmd(buf, ro + 8, 16);
	struct tsr_completion *comp;

	chip_map(self->c, 1, ro, buf, 4096, TSR_PTE_READ);
	comp = chip_run(self->c, &c, sizeof(c));
	EXPECT_EQ(TSR_ERR_MMU_PERMISSION, comp->error);
	EXPECT_EQ(ro + 8, comp->fault_va);
	/* Reading through the same page is allowed. */
	c = copy_cmd(ro, buf + 64, 16);
	EXPECT_EQ(TSR_ERR_NONE, chip_run(self->c, &c, sizeof(c))->error);
}

TEST_F(q, another_contexts_memory_is_out_of_reach)
{
	uint64_t mine = chip_buffer(self->c, 1, 4096);
	uint64_t theirs;
	struct tsr_cmd_dma c;
	struct tsr_completion *comp;

	chip_context(self->c, 2);
	theirs = chip_buffer(self->c, 2, 4096);
	memset(host_ptr(self->c, theirs), 0x5a, 64);
	c = copy_cmd(mine, theirs, 64);
	comp = chip_run(self->c, &c, sizeof(c));
	EXPECT_EQ(TSR_ERR_MMU_UNMAPPED, comp->error);
	EXPECT_EQ(0x5a, ((uint8_t *)host_ptr(self->c, theirs))[0]);
}

TEST_F(q, a_large_page_maps_two_mib)
{
	struct tsr_context_entry *e = host_ptr(self->c, CTX_TABLE_ADDR);
	uint64_t buf = chip_buffer(self->c, 1, 4096);
	uint64_t va = 0x40000000 + TSR_LARGE_PAGE_SIZE;
	uint64_t *l2 = host_ptr(self->c, e[1].root & TSR_PTE_ADDR_MASK);
	uint64_t l1 = alloc_pt_page(self->c);
	struct tsr_cmd_dma c = copy_cmd(buf, va + TSR_LARGE_PAGE_SIZE - 16, 16);

	l2[TSR_PT_INDEX(va, 2)] = l1 | TSR_PTE_VALID;
	((uint64_t *)host_ptr(self->c, l1))[TSR_PT_INDEX(va, 1)] =
		0x200000 | TSR_PTE_VALID | TSR_PTE_LEAF | TSR_PTE_HBM |
		TSR_PTE_READ | TSR_PTE_WRITE;
	memset(host_ptr(self->c, buf), 0xee, 16);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &c, sizeof(c))->error);
	EXPECT_EQ(0xee, self->c->hbm[0x200000 + TSR_LARGE_PAGE_SIZE - 1]);
}

TEST_F(q, a_stream_walks_the_upper_levels_once_per_region)
{
	uint64_t src = chip_buffer(self->c, 1, 64 * 4096);
	uint64_t hbm_va = 0x10000000;
	struct tsr_cmd_dma c = copy_cmd(src, hbm_va, 64 * 4096);
	uint32_t before;

	chip_map(self->c, 1, hbm_va, 0, 64 * 4096,
		 TSR_PTE_READ | TSR_PTE_WRITE | TSR_PTE_HBM);
	memset(host_ptr(self->c, src), 0x42, 64 * 4096);
	before = self->c->pt_reads;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &c, sizeof(c))->error);
	EXPECT_EQ(0x42, self->c->hbm[64 * 4096 - 1]);
	/*
	 * 64 pages each side: one level-0 read per page, plus the upper two
	 * levels once per 2 MiB region touched (the job's command buffer and
	 * record share a region), not 3 reads per page.
	 */
	EXPECT_GE(2 * 64 + 3 * 2 + 3 + 2, self->c->pt_reads - before)
		TH_LOG("%u page-table reads", self->c->pt_reads - before);
}

TEST_F(q, a_failed_system_memory_transfer_is_a_dma_error)
{
	uint64_t buf = chip_buffer(self->c, 1, 4096);
	uint64_t far = 0x30000000;
	struct tsr_cmd_dma c = copy_cmd(far, buf, 16);

	chip_map(self->c, 1, far, SYSMEM_SIZE + 0x1000, 4096, TSR_PTE_READ);
	EXPECT_EQ(TSR_ERR_DMA, chip_run(self->c, &c, sizeof(c))->error);
}

TEST_F(q, semaphores_signal_increment_and_wait)
{
	uint64_t sem = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_sem cmds[3] = {
		{ HDR(TSR_OP_SEM_SIGNAL, struct tsr_cmd_sem), sem, 40 },
		{ HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem), sem, 2 },
		{ HDR(TSR_OP_SEM_WAIT, struct tsr_cmd_sem), sem, 42 },
	};

	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, cmds, sizeof(cmds))->error);
	EXPECT_EQ(42, *(uint64_t *)host_ptr(self->c, sem));
	cmds[0].va = sem + 4;
	EXPECT_EQ(TSR_ERR_BAD_ALIGNMENT,
		  chip_run(self->c, cmds, sizeof(cmds))->error);
}

TEST_F(q, a_wait_on_one_queue_is_released_by_a_signal_on_another)
{
	uint64_t sem = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_sem wait = {
		HDR(TSR_OP_SEM_WAIT, struct tsr_cmd_sem), sem, 3 };
	struct tsr_cmd_sem inc = { HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem), sem, 1 };
	struct runner waiter = { self->c, 0 };
	struct tsr_completion *w, *s[3];
	pthread_t t;
	int i;

	w = chip_queue_job(self->c, 0, 1, &wait, sizeof(wait), 1);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_queue, &waiter));
	for (i = 0; i < 3; i++)
		s[i] = chip_queue_job(self->c, 1, 1, &inc, sizeof(inc), i);
	tsr_core_queue_run(self->c->core, 1);
	ASSERT_EQ(0, pthread_join(t, NULL));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(TSR_JOB_STATUS_DONE, s[i]->status);
	EXPECT_EQ(TSR_JOB_STATUS_DONE, w->status);
	EXPECT_EQ(3, *(uint64_t *)host_ptr(self->c, sem));
}

/*
 * Re-reads an hour apart: only a wake-up ends these waits, sent by a
 * signal of the semaphore waited on or of the abort semaphore, and not by
 * one of a semaphore next to them.
 */
TEST_F(q, a_signal_wakes_the_queue_sleeping_on_its_semaphore)
{
	uint64_t sem = chip_buffer(self->c, 1, 4096), abort_sem = sem + 8;
	uint64_t other = sem + 16;
	struct tsr_cmd_sem wait = {
		HDR(TSR_OP_SEM_WAIT, struct tsr_cmd_sem), sem, 2 };
	struct tsr_cmd_sem_wait_abort wait_abort = {
		HDR(TSR_OP_SEM_WAIT_ABORT, struct tsr_cmd_sem_wait_abort),
		sem, 100, abort_sem };
	struct tsr_cmd_sem signals[3] = {
		{ HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem), other, 1 },
		{ HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem), sem, 1 },
		{ HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem), sem, 1 },
	};
	struct tsr_cmd_sem abort_it = {
		HDR(TSR_OP_SEM_SIGNAL, struct tsr_cmd_sem), abort_sem, 1 };
	struct runner waiter = { self->c, 0 };
	struct tsr_completion *w;
	int64_t wakeups;
	uint64_t now;
	bool sleeping;
	pthread_t t;

	tsr_core_set_sem_poll(self->c->core, 3600ull * 1000000000);
	w = chip_queue_job(self->c, 0, 1, &wait, sizeof(wait), 1);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_queue, &waiter));
	wakeups = chip_until_sem_sleeping(self->c, 0, 10000);
	ASSERT_LE(0, wakeups);
	/* The neighbour's signal leaves it alone. */
	ASSERT_EQ(TSR_ERR_NONE,
		  chip_run_on(self->c, 1, &signals[0], sizeof(signals[0]))->error);
	tsr_core_sem_waiter(self->c->core, 0, &sleeping, &now);
	EXPECT_EQ(wakeups, (int64_t)now);
	ASSERT_EQ(TSR_ERR_NONE,
		  chip_run_on(self->c, 1, &signals[1], 2 * sizeof(signals[1]))->error);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(TSR_JOB_STATUS_DONE, w->status);

	w = chip_queue_job(self->c, 0, 1, &wait_abort, sizeof(wait_abort), 2);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_queue, &waiter));
	ASSERT_LE(0, chip_until_sem_sleeping(self->c, 0, 10000));
	ASSERT_EQ(TSR_ERR_NONE,
		  chip_run_on(self->c, 1, &abort_it, sizeof(abort_it))->error);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(TSR_ERR_PEER_ABORT, w->error);
}

/*
 * A signal in one context wakes the queues waiting in another, where a
 * shared buffer may hold the same semaphore at another address.
 */
TEST_F(q, a_signal_also_wakes_the_waiters_of_other_contexts)
{
	uint64_t mine = chip_buffer(self->c, 1, 4096), theirs;
	struct tsr_cmd_sem inc = { HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem), mine, 1 };
	struct tsr_cmd_sem wait = { HDR(TSR_OP_SEM_WAIT, struct tsr_cmd_sem), 0, 1 };
	struct runner waiter = { self->c, 0 };
	struct tsr_completion *w;
	int64_t wakeups;
	uint64_t now;
	bool sleeping;
	pthread_t t;

	chip_context(self->c, 2);
	theirs = chip_buffer(self->c, 2, 4096);
	wait.va = theirs;
	tsr_core_set_sem_poll(self->c->core, 3600ull * 1000000000);
	w = chip_queue_job(self->c, 0, 2, &wait, sizeof(wait), 1);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_queue, &waiter));
	wakeups = chip_until_sem_sleeping(self->c, 0, 10000);
	ASSERT_LE(0, wakeups);
	ASSERT_EQ(TSR_ERR_NONE, chip_run_on(self->c, 1, &inc, sizeof(inc))->error);
	tsr_core_sem_waiter(self->c->core, 0, &sleeping, &now);
	EXPECT_EQ(wakeups + 1, (int64_t)now);
	/* Its own semaphore, from its own context, ends the wait. */
	inc.va = theirs;
	chip_queue_job(self->c, 1, 2, &inc, sizeof(inc), 2);
	tsr_core_queue_run(self->c->core, 1);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(TSR_JOB_STATUS_DONE, w->status);
}

TEST_F(q, an_abortable_wait_ends_when_satisfied_or_fails_once_aborted)
{
	uint64_t sem = chip_buffer(self->c, 1, 4096), abort_sem = sem + 8;
	struct tsr_cmd_sem_wait_abort wait = {
		HDR(TSR_OP_SEM_WAIT_ABORT, struct tsr_cmd_sem_wait_abort),
		sem, 2, abort_sem };
	struct tsr_cmd_sem inc = { HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem), sem, 1 };
	struct tsr_cmd_sem abort_it = {
		HDR(TSR_OP_SEM_SIGNAL, struct tsr_cmd_sem), abort_sem, 1 };
	struct runner waiter = { self->c, 0 };
	struct tsr_completion *w, *s;
	pthread_t t;

	/* Satisfied: the value reached, no abort. */
	*(uint64_t *)host_ptr(self->c, sem) = 2;
	EXPECT_EQ(TSR_ERR_NONE, chip_run(self->c, &wait, sizeof(wait))->error);

	/* Queue 0 waits for 4 while queue 1 adds 1 (3), then aborts. */
	wait.value = 4;
	w = chip_queue_job(self->c, 0, 1, &wait, sizeof(wait), 1);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_queue, &waiter));
	chip_queue_job(self->c, 1, 1, &inc, sizeof(inc), 1);
	s = chip_queue_job(self->c, 1, 1, &abort_it, sizeof(abort_it), 2);
	tsr_core_queue_run(self->c->core, 1);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(TSR_JOB_STATUS_DONE, s->status);
	EXPECT_EQ(TSR_JOB_STATUS_ERROR, w->status);
	EXPECT_EQ(TSR_ERR_PEER_ABORT, w->error);
	EXPECT_EQ(0, w->failed_cmd);

	/* The abort wins over a satisfied wait; addresses are checked. */
	wait.value = 1;
	EXPECT_EQ(TSR_ERR_PEER_ABORT, chip_run(self->c, &wait, sizeof(wait))->error);
	wait.abort_va = abort_sem + 4;
	EXPECT_EQ(TSR_ERR_BAD_ALIGNMENT, chip_run(self->c, &wait, sizeof(wait))->error);
	/* Address 0 is an address like any other: mapped here, holding 0. */
	wait.abort_va = 0;
	EXPECT_EQ(TSR_ERR_NONE, chip_run(self->c, &wait, sizeof(wait))->error);
	wait.abort_va = 0x7f000000;
	EXPECT_EQ(TSR_ERR_MMU_UNMAPPED, chip_run(self->c, &wait, sizeof(wait))->error);
	wait.abort_va = abort_sem;
	wait.hdr.flags = 2;
	EXPECT_EQ(TSR_ERR_BAD_FLAGS, chip_run(self->c, &wait, sizeof(wait))->error);
}

TEST_F(q, a_signalled_wait_ends_no_earlier_than_the_signal)
{
	uint64_t sem = chip_buffer(self->c, 1, 4096);
	uint64_t big = chip_buffer(self->c, 1, 1 << 20);
	struct tsr_cmd_sem wait = {
		HDR(TSR_OP_SEM_WAIT, struct tsr_cmd_sem), sem, 1 };
	struct {
		struct tsr_cmd_dma fill;
		struct tsr_cmd_sem inc;
	} slow = {
		{ HDR(TSR_OP_DMA_FILL, struct tsr_cmd_dma), .src = 7, .dst = big,
		  .size = { 1 << 20, 1, 1 } },
		{ HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem), sem, 1 },
	};
	struct runner waiter = { self->c, 0 };
	struct tsr_completion *w, *s;
	pthread_t t;

	w = chip_queue_job(self->c, 0, 1, &wait, sizeof(wait), 1);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_queue, &waiter));
	s = chip_queue_job(self->c, 1, 1, &slow, sizeof(slow), 1);
	tsr_core_queue_run(self->c->core, 1);
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(TSR_JOB_STATUS_DONE, s->status);
	ASSERT_EQ(TSR_JOB_STATUS_DONE, w->status);
	/* The 1 MiB fill takes thousands of cycles; the wait waited for it. */
	EXPECT_LT(5000, s->end_cycle);
	EXPECT_LE(s->end_cycle, w->end_cycle);
}

/*
 * A wait ends when its value was reached on the modeled clock, whatever
 * the host ran meanwhile: here the signaller has already run its second,
 * much later signal when the waiters look.
 */
TEST_F(q, a_wait_ends_when_its_value_was_reached_not_at_the_latest_signal)
{
	uint64_t sem = chip_buffer(self->c, 1, 4096);
	uint64_t big = chip_buffer(self->c, 1, 1 << 20);
	struct tsr_cmd_sem wait = {
		HDR(TSR_OP_SEM_WAIT, struct tsr_cmd_sem), sem, 1 };
	struct {
		struct tsr_cmd_sem inc1;
		struct tsr_cmd_dma fill;
		struct tsr_cmd_sem inc2;
	} signals = {
		{ HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem), sem, 1 },
		{ HDR(TSR_OP_DMA_FILL, struct tsr_cmd_dma), .src = 7, .dst = big,
		  .size = { 1 << 20, 1, 1 } },
		{ HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem), sem, 1 },
	};
	struct tsr_cmd_sem set = {
		HDR(TSR_OP_SEM_SIGNAL, struct tsr_cmd_sem), sem, 5 };
	struct tsr_completion *s, *w1, *w2, *w5;

	s = chip_queue_job(self->c, 1, 1, &signals, sizeof(signals), 1);
	tsr_core_queue_run(self->c->core, 1);
	ASSERT_EQ(TSR_JOB_STATUS_DONE, s->status);
	EXPECT_LT(5000, s->end_cycle - s->start_cycle);

	w1 = chip_queue_job(self->c, 0, 1, &wait, sizeof(wait), 1);
	tsr_core_queue_run(self->c->core, 0);
	wait.value = 2;
	w2 = chip_queue_job(self->c, 2, 1, &wait, sizeof(wait), 1);
	tsr_core_queue_run(self->c->core, 2);
	ASSERT_EQ(TSR_JOB_STATUS_DONE, w1->status);
	ASSERT_EQ(TSR_JOB_STATUS_DONE, w2->status);
	/* 1 was reached by the first signal, before the fill; 2 after it. */
	EXPECT_GT(s->start_cycle + 1000, w1->end_cycle);
	EXPECT_LE(s->end_cycle, w2->end_cycle);

	/* A later SET starts the history again: 5 is reached at the SET. */
	s = chip_queue_job(self->c, 1, 1, &set, sizeof(set), 2);
	tsr_core_queue_run(self->c->core, 1);
	ASSERT_EQ(TSR_JOB_STATUS_DONE, s->status);
	wait.value = 5;
	w5 = chip_queue_job(self->c, 3, 1, &wait, sizeof(wait), 1);
	tsr_core_queue_run(self->c->core, 3);
	ASSERT_EQ(TSR_JOB_STATUS_DONE, w5->status);
	EXPECT_LE(s->end_cycle, w5->end_cycle);
}

/*
 * One program on a fresh chip: queue 1 signals early, then once more after
 * a 1 MiB fill; queue 0 waits for the first signal.  With @between, the
 * second signal lands while the waiter has read the semaphore (1) but not
 * yet ended its wait; else after the wait.  The wait's record in *@w, the
 * second signaller's in *@s.
 */
static void wait_beside_a_later_signal(bool between, struct tsr_completion *w,
				       struct tsr_completion *s)
{
	struct test_chip *c = chip_new("v4");
	uint64_t sem = chip_buffer(c, 1, 4096);
	uint64_t big = chip_buffer(c, 1, 1 << 20);
	struct tsr_cmd_sem inc = {
		HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem), sem, 1 };
	struct tsr_cmd_sem wait = {
		HDR(TSR_OP_SEM_WAIT, struct tsr_cmd_sem), sem, 1 };
	struct {
		struct tsr_cmd_dma fill;
		struct tsr_cmd_sem inc;
	} late = {
		{ HDR(TSR_OP_DMA_FILL, struct tsr_cmd_dma), .src = 7, .dst = big,
		  .size = { 1 << 20, 1, 1 } },
		inc,
	};
	struct runner waiter = { c, 0 };
	struct tsr_completion *wc, *sc;
	pthread_t t;

	chip_run_on(c, 1, &inc, sizeof(inc));
	wc = chip_queue_job(c, 0, 1, &wait, sizeof(wait), 1);
	sc = chip_queue_job(c, 1, 1, &late, sizeof(late), 2);
	if (between) {
		chip_hold_at(c, sem, true);
		pthread_create(&t, NULL, run_queue, &waiter);
		chip_wait_held(c);
		tsr_core_queue_run(c->core, 1);
		chip_release(c);
		pthread_join(t, NULL);
	} else {
		tsr_core_queue_run(c->core, 0);
		tsr_core_queue_run(c->core, 1);
	}
	*w = *wc;
	*s = *sc;
	chip_free(c);
}

/*
 * Design decision 7: a wait ends at the signal that reached its value,
 * even when the host lands a later signal between the wait's reading the
 * semaphore and its looking up when the value was reached.
 */
TEST(a_signal_landing_while_a_wait_ends_does_not_move_the_wait)
{
	struct tsr_completion w[2], s[2];
	int i;

	for (i = 0; i < 2; i++) {
		wait_beside_a_later_signal(i, &w[i], &s[i]);
		ASSERT_EQ(TSR_JOB_STATUS_DONE, w[i].status);
		ASSERT_EQ(TSR_JOB_STATUS_DONE, s[i].status);
		/* The wait ended long before the second signal. */
		EXPECT_GT(s[i].end_cycle - 1000, w[i].end_cycle);
	}
	EXPECT_EQ(w[0].end_cycle, w[1].end_cycle);
	EXPECT_EQ(s[0].end_cycle, s[1].end_cycle);
}

/*
 * The chip remembers a semaphore's latest signals on the modeled clock,
 * not the host's: one late signal and 9 early ones (it keeps 8) give the
 * same wait whichever queue ran first.
 */
TEST(the_signals_remembered_are_the_latest_on_the_modeled_clock)
{
	struct tsr_completion *w[2], *late[2];
	struct test_chip *c[2];
	int i, k;

	for (i = 0; i < 2; i++) {
		uint64_t sem, big;
		struct tsr_cmd_sem incs[9], wait;
		struct {
			struct tsr_cmd_dma fill;
			struct tsr_cmd_sem inc;
		} slow;

		c[i] = chip_new("v4");
		sem = chip_buffer(c[i], 1, 4096);
		big = chip_buffer(c[i], 1, 1 << 20);
		for (k = 0; k < 9; k++)
			incs[k] = (struct tsr_cmd_sem){
				HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem), sem, 1 };
		slow.fill = (struct tsr_cmd_dma){
			HDR(TSR_OP_DMA_FILL, struct tsr_cmd_dma), .src = 7,
			.dst = big, .size = { 1 << 20, 1, 1 } };
		slow.inc = incs[0];
		wait = (struct tsr_cmd_sem){
			HDR(TSR_OP_SEM_WAIT, struct tsr_cmd_sem), sem, 10 };
		/* The late signal first in host order, then the 9 early ones. */
		if (i) {
			late[i] = chip_run_on(c[i], 2, &slow, sizeof(slow));
			chip_run_on(c[i], 1, incs, sizeof(incs));
		} else {
			chip_run_on(c[i], 1, incs, sizeof(incs));
			late[i] = chip_run_on(c[i], 2, &slow, sizeof(slow));
		}
		w[i] = chip_run_on(c[i], 0, &wait, sizeof(wait));
		ASSERT_EQ(TSR_JOB_STATUS_DONE, w[i]->status);
		/* 10 was reached by the late signal only. */
		EXPECT_LE(late[i]->end_cycle, w[i]->end_cycle);
	}
	EXPECT_EQ(w[0]->end_cycle, w[1]->end_cycle);
	chip_free(c[0]);
	chip_free(c[1]);
}

TEST_F(q, a_queue_reset_aborts_a_waiting_job)
{
	uint64_t sem = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_sem wait = {
		HDR(TSR_OP_SEM_WAIT, struct tsr_cmd_sem), sem, 1 };
	struct runner waiter = { self->c, 2 };
	pthread_t t;

	chip_queue_job(self->c, 2, 1, &wait, sizeof(wait), 1);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_queue, &waiter));
	while (qrd(self->c, 2, TSR_QREG_STATUS) != TSR_QSTATUS_RUNNING)
		;
	qwr(self->c, 2, TSR_QREG_CONTROL, TSR_QCTRL_RESET | TSR_QCTRL_ENABLE);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, qrd(self->c, 2, TSR_QREG_HEAD));
	EXPECT_EQ(0, qrd(self->c, 2, TSR_QREG_TAIL));
	EXPECT_EQ(0, qrd(self->c, 2, TSR_QREG_JOBS_DONE));
}

TEST_F(q, timestamps_follow_the_modeled_clock)
{
	uint64_t buf = chip_buffer(self->c, 1, 4096);
	uint64_t src = chip_buffer(self->c, 1, 65536);
	struct {
		struct tsr_cmd_timestamp t0;
		struct tsr_cmd_dma copy;
		struct tsr_cmd_timestamp t1;
	} cmds = {
		{ HDR(TSR_OP_TIMESTAMP, struct tsr_cmd_timestamp), buf },
		copy_cmd(src, buf + 64, 1024),
		{ HDR(TSR_OP_TIMESTAMP, struct tsr_cmd_timestamp), buf + 8 },
	};
	uint64_t *ts = host_ptr(self->c, buf);
	struct tsr_completion *comp;

	comp = chip_run(self->c, &cmds, sizeof(cmds));
	ASSERT_EQ(TSR_ERR_NONE, comp->error);
	EXPECT_LE(comp->start_cycle, ts[0]);
	EXPECT_LE(ts[0] + comp->dma_cycles, ts[1]);
	EXPECT_LE(ts[1], comp->end_cycle);
}

TEST_F(q, the_interrupt_command_raises_the_queue_vector)
{
	struct tsr_cmd_header intr = { .opcode = TSR_OP_INTERRUPT, .size_qw = 1 };

	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &intr, sizeof(intr))->error);
	EXPECT_EQ(TSR_QIRQ_USER | TSR_QIRQ_JOB_DONE,
		  qrd(self->c, 0, TSR_QREG_IRQ_STATUS));
	EXPECT_EQ(2, self->c->irqs[TSR_MSIX_VEC_QUEUE(0)]);
}

TEST_F(q, the_ring_cannot_move_while_the_queue_runs)
{
	qwr(self->c, 0, TSR_QREG_RING_SIZE, 64);
	EXPECT_EQ(RING_SIZE, qrd(self->c, 0, TSR_QREG_RING_SIZE));
	qwr(self->c, 0, TSR_QREG_CONTROL, 0);
	qwr(self->c, 0, TSR_QREG_RING_SIZE, 3);
	EXPECT_EQ(0, qrd(self->c, 0, TSR_QREG_RING_SIZE));
	qwr(self->c, 0, TSR_QREG_RING_SIZE, 64);
	EXPECT_EQ(64, qrd(self->c, 0, TSR_QREG_RING_SIZE));
}

TEST_F(q, a_tail_past_the_ring_is_ignored)
{
	uint32_t kicks = self->c->kicks[0];

	qwr(self->c, 0, TSR_QREG_TAIL, RING_SIZE);
	EXPECT_EQ(0, qrd(self->c, 0, TSR_QREG_TAIL));
	EXPECT_EQ(kicks, self->c->kicks[0]);
}

TEST_F(q, a_large_dma_takes_bytes_over_bandwidth)
{
	uint64_t len = HBM_SIZE;
	uint64_t src = chip_buffer(self->c, 1, len);
	uint64_t hbm_va = 0x10000000;
	struct tsr_cmd_dma c = copy_cmd(src, hbm_va, len / 4);
	struct tsr_completion *comp;
	double want;

	chip_map(self->c, 1, hbm_va, 0, HBM_SIZE, TSR_PTE_READ | TSR_PTE_WRITE |
		 TSR_PTE_HBM);
	c.size[1] = 4;
	c.src_stride[0] = len / 4;
	c.dst_stride[0] = HBM_SIZE / 4;
	comp = chip_run(self->c, &c, sizeof(c));
	ASSERT_EQ(TSR_ERR_NONE, comp->error);
	/* System memory to HBM: the host link's bandwidth bounds it. */
	want = (double)len / (self->c->cfg.host_dma_gbps * 1e9) *
	       self->c->cfg.clock_mhz * 1e6;
	EXPECT_GT(0.02, fabs(comp->dma_cycles / want - 1))
		TH_LOG("%llu cycles, want %.0f",
		       (unsigned long long)comp->dma_cycles, want);
}

/* ------------------------------------------------ hostile guests */

TEST_F(q, the_ring_of_a_disabled_queue_cannot_change_under_its_job)
{
	uint64_t sem = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_sem wait = {
		HDR(TSR_OP_SEM_WAIT, struct tsr_cmd_sem), sem, 1 };
	struct runner waiter = { self->c, 0 };
	struct tsr_completion *comp;
	uint32_t errors;
	pthread_t t;

	comp = chip_queue_job(self->c, 0, 1, &wait, sizeof(wait), 3);
	chip_hold(self->c, sem);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_queue, &waiter));
	chip_wait_held(self->c);
	/* Disabled without a reset, the queue still finishes its job. */
	errors = self->c->guest_errors;
	qwr(self->c, 0, TSR_QREG_CONTROL, 0);
	qwr(self->c, 0, TSR_QREG_RING_SIZE, 0);
	qwr(self->c, 0, TSR_QREG_RING_BASE_LO, 0x9000);
	EXPECT_EQ(errors + 2, self->c->guest_errors);
	EXPECT_NE(NULL, strstr(self->c->guest_error, "running a job"));
	chip_release(self->c);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(TSR_ERR_ABORTED, comp->error);
	EXPECT_EQ(1, qrd(self->c, 0, TSR_QREG_HEAD));
	EXPECT_EQ(RING_SIZE, qrd(self->c, 0, TSR_QREG_RING_SIZE));
	EXPECT_EQ(RING_ADDR, qrd(self->c, 0, TSR_QREG_RING_BASE_LO));
	/* Once the job is gone the ring may change. */
	qwr(self->c, 0, TSR_QREG_RING_SIZE, 32);
	EXPECT_EQ(32, qrd(self->c, 0, TSR_QREG_RING_SIZE));
}

/*
 * A job its disabled queue aborts ends and moves HEAD past it, as a job
 * never taken would leave HEAD on the next: STARTED tells the two apart,
 * for the driver to know after a chip reset which jobs may not run again.
 */
TEST_F(q, started_counts_a_job_the_queue_aborted_and_not_one_it_never_took)
{
	uint64_t sem = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_sem wait = {
		HDR(TSR_OP_SEM_WAIT, struct tsr_cmd_sem), sem, 1 };
	struct runner waiter = { self->c, 0 };
	struct tsr_completion *first, *second;
	pthread_t t;

	first = chip_queue_job(self->c, 0, 1, &wait, sizeof(wait), 1);
	second = chip_queue_job(self->c, 0, 1, &nop, sizeof(nop), 2);
	EXPECT_EQ(0, qrd(self->c, 0, TSR_QREG_STARTED));
	chip_hold(self->c, sem);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_queue, &waiter));
	chip_wait_held(self->c);
	EXPECT_EQ(1, qrd(self->c, 0, TSR_QREG_STARTED));
	EXPECT_EQ(0, qrd(self->c, 0, TSR_QREG_HEAD));
	qwr(self->c, 0, TSR_QREG_CONTROL, 0);
	chip_release(self->c);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(TSR_ERR_ABORTED, first->error);
	EXPECT_EQ(0, second->status);
	EXPECT_EQ(1, qrd(self->c, 0, TSR_QREG_HEAD));
	EXPECT_EQ(1, qrd(self->c, 0, TSR_QREG_STARTED));

	qwr(self->c, 0, TSR_QREG_CONTROL, TSR_QCTRL_ENABLE);
	tsr_core_queue_run(self->c->core, 0);
	EXPECT_EQ(TSR_JOB_STATUS_DONE, second->status);
	EXPECT_EQ(2, qrd(self->c, 0, TSR_QREG_STARTED));
	qwr(self->c, 0, TSR_QREG_CONTROL, TSR_QCTRL_RESET | TSR_QCTRL_ENABLE);
	EXPECT_EQ(0, qrd(self->c, 0, TSR_QREG_STARTED));
}

TEST_F(q, a_queue_reset_cuts_off_the_writes_of_the_job_it_aborts)
{
	uint64_t src = chip_buffer(self->c, 1, 4096);
	uint64_t dst = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_dma c = copy_cmd(src, dst, 64);
	struct runner r = { self->c, 0 };
	struct tsr_completion *comp;
	pthread_t t;

	memset(host_ptr(self->c, src), 0x11, 64);
	comp = chip_queue_job(self->c, 0, 1, &c, sizeof(c), 5);
	chip_hold(self->c, src);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_queue, &r));
	chip_wait_held(self->c);
	/* The job is past its last abort check: only its writes are left. */
	qwr(self->c, 0, TSR_QREG_CONTROL, TSR_QCTRL_RESET | TSR_QCTRL_ENABLE);
	chip_release(self->c);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, ((uint8_t *)host_ptr(self->c, dst))[0]);
	/* Its record stays as the job's start left it. */
	EXPECT_EQ(TSR_JOB_STATUS_RUNNING, comp->status);
	EXPECT_EQ(0, *(uint64_t *)host_ptr(self->c, FENCE_ADDR(0)));
	EXPECT_EQ(0, qrd(self->c, 0, TSR_QREG_JOBS_DONE));
	EXPECT_EQ(0, qrd(self->c, 0, TSR_QREG_JOBS_FAILED));
	EXPECT_EQ(0, qrd(self->c, 0, TSR_QREG_IRQ_STATUS));
}

struct reg_writer {
	struct test_chip *c;
	bool done;
};

static void *write_other_queue(void *arg)
{
	struct reg_writer *w = arg;

	qwr(w->c, 2, TSR_QREG_IRQ_ENABLE, TSR_QIRQ_ALL);
	qwr(w->c, 2, TSR_QREG_CONTROL, TSR_QCTRL_RESET | TSR_QCTRL_ENABLE);
	__atomic_store_n(&w->done, true, __ATOMIC_SEQ_CST);
	return NULL;
}

static bool wait_true(bool *flag, int ms)
{
	struct timespec tick = { 0, 1000000 };

	while (!__atomic_load_n(flag, __ATOMIC_SEQ_CST) && ms--)
		nanosleep(&tick, NULL);
	return __atomic_load_n(flag, __ATOMIC_SEQ_CST);
}

TEST_F(q, register_writes_never_wait_for_a_semaphore_transfer)
{
	uint64_t sem = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_sem signal = {
		HDR(TSR_OP_SEM_SIGNAL, struct tsr_cmd_sem), sem, 1 };
	struct runner r = { self->c, 1 };
	struct reg_writer w = { self->c, false };
	pthread_t t, tw;

	chip_queue_job(self->c, 1, 1, &signal, sizeof(signal), 1);
	chip_hold(self->c, sem);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_queue, &r));
	chip_wait_held(self->c);
	/* Queue 1 is inside its semaphore's transfer; queue 2 is elsewhere. */
	ASSERT_EQ(0, pthread_create(&tw, NULL, write_other_queue, &w));
	EXPECT_TRUE(wait_true(&w.done, 2000));
	chip_release(self->c);
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(0, pthread_join(tw, NULL));
	EXPECT_EQ(1, *(uint64_t *)host_ptr(self->c, sem));
}

TEST_F(q, a_failed_job_is_reported_as_a_guest_error)
{
	struct tsr_cmd_header bad = { .opcode = 0x7f, .size_qw = 1 };

	chip_run(self->c, &bad, sizeof(bad));
	EXPECT_STREQ("queue 0: job in ring slot 0 failed with BAD_OPCODE (1) at command 0, VA 0x0",
		     self->c->guest_error);
}

/* A copy into a canary page, which must come out untouched. */
static uint32_t dma_into_canary(struct test_chip *c, uint64_t dst,
				struct tsr_cmd_dma *cmd)
{
	uint32_t err;
	unsigned int i;

	memset(host_ptr(c, dst), 0xaa, 4096);
	err = chip_run(c, cmd, sizeof(*cmd))->error;
	for (i = 0; i < 4096; i++)
		if (((uint8_t *)host_ptr(c, dst))[i] != 0xaa)
			return ~0u;
	return err;
}

TEST_F(q, dma_transfers_whose_size_wraps_are_too_large_and_touch_nothing)
{
	static const uint32_t sizes[][3] = {
		{ 1u << 31, 1u << 31, 4 },	/* 2^64: wraps to 0 */
		{ 1u << 30, 1u << 30, 16 },
		{ ~3u, ~0u, ~0u },	/* a fill needs whole words */
	};
	uint64_t src = chip_buffer(self->c, 1, 4096);
	uint64_t dst = chip_buffer(self->c, 1, 4096);
	unsigned int i, op;

	for (op = TSR_OP_DMA_COPY; op <= TSR_OP_DMA_FILL; op++)
		for (i = 0; i < 3; i++) {
			struct tsr_cmd_dma c = copy_cmd(src, dst, 0);

			c.hdr.opcode = op;
			if (op == TSR_OP_DMA_FILL)
				c.src = 0x12345678;
			memcpy(c.size, sizes[i], sizeof(c.size));
			/* Rows and planes apart, as far as 64 bits tell. */
			c.dst_stride[0] = c.size[0];
			c.dst_stride[1] = 1ull << 62;
			EXPECT_EQ(TSR_ERR_TOO_LARGE,
				  dma_into_canary(self->c, dst, &c))
				TH_LOG("op %u, sizes %u", op, i);
		}
}

TEST_F(q, dma_strides_that_wrap_or_overlap_are_bad_and_touch_nothing)
{
	const uint64_t minus64 = -64ull, minus1 = -1ull;
	uint64_t src = chip_buffer(self->c, 1, 4096);
	uint64_t dst = chip_buffer(self->c, 1, 4096);
	struct {
		uint32_t size[3];
		uint64_t src_stride[2], dst_stride[2];
		uint64_t dst;
	} cases[] = {
		/* destination rows stepping back over each other */
		{ { 128, 2, 1 }, { 0, 0 }, { minus64, 0 }, dst },
		/* ... and planes on top of each other */
		{ { 128, 3, 2 }, { 0, 0 }, { minus64, 0 }, dst },
		/* the second plane one byte before the first */
		{ { 64, 1, 2 }, { 0, 0 }, { 64, minus1 }, dst },
		/* a source stride that wraps back */
		{ { 64, 2, 1 }, { -32ull, 0 }, { 64, 0 }, dst },
		/* a destination whose second row lands past 2^64, below it */
		{ { 64, 2, 1 }, { 0, 0 }, { -(1ull << 20), 0 }, dst },
		/* a destination at the very top of the address space */
		{ { 128, 1, 1 }, { 0, 0 }, { 0, 0 }, -64ull },
	};
	unsigned int i, op;

	for (op = TSR_OP_DMA_COPY; op <= TSR_OP_DMA_FILL; op++)
		for (i = 0; i < ARRAY_SIZE(cases); i++) {
			struct tsr_cmd_dma c = copy_cmd(src, cases[i].dst, 0);

			if (op == TSR_OP_DMA_FILL && cases[i].src_stride[0])
				continue;
			c.hdr.opcode = op;
			memcpy(c.size, cases[i].size, sizeof(c.size));
			memcpy(c.dst_stride, cases[i].dst_stride,
			       sizeof(c.dst_stride));
			if (op == TSR_OP_DMA_COPY)
				memcpy(c.src_stride, cases[i].src_stride,
				       sizeof(c.src_stride));
			else
				c.src = 0x12345678;
			EXPECT_EQ(TSR_ERR_BAD_STRIDE,
				  dma_into_canary(self->c, dst, &c))
				TH_LOG("op %u, case %u", op, i);
		}
}

TEST_F(q, a_sixty_four_bit_ring_address_that_wraps_fails_the_job)
{
	qwr(self->c, 0, TSR_QREG_CONTROL, 0);
	qwr(self->c, 0, TSR_QREG_RING_BASE_LO, 0xffffffc0);
	qwr(self->c, 0, TSR_QREG_RING_BASE_HI, 0xffffffff);
	qwr(self->c, 0, TSR_QREG_CONTROL, TSR_QCTRL_ENABLE);
	qwr(self->c, 0, TSR_QREG_TAIL, 2);
	tsr_core_queue_run(self->c->core, 0);
	/* Slot 1 is at 2^64: no descriptor, and nothing read at bus 0. */
	EXPECT_EQ(2, qrd(self->c, 0, TSR_QREG_JOBS_FAILED));
	EXPECT_EQ(TSR_ERR_DMA, qrd(self->c, 0, TSR_QREG_LAST_ERROR));
}

TEST_HARNESS_MAIN
