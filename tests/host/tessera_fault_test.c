// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of fault injection in the Tessera chip core: each fault
 * does what Documentation/chip.md says, is counted, and goes away with a
 * reset; the chip keeps serving the jobs the fault does not hit.
 */
#include "kselftest_harness.h"

#include "tessera_chip.h"

static const struct tsr_cmd_header nop = {
	.opcode = TSR_OP_NOP, .size_qw = 1,
};

FIXTURE(f) {
	struct test_chip *c;
	uint64_t hbm_va;
	uint64_t buf;
};

FIXTURE_SETUP(f)
{
	self->c = chip_new("v4");
	self->hbm_va = 0x10000000;
	chip_map(self->c, 1, self->hbm_va, 0, 1 << 20,
		 TSR_PTE_READ | TSR_PTE_WRITE | TSR_PTE_HBM);
	self->buf = chip_buffer(self->c, 1, 4096);
}

FIXTURE_TEARDOWN(f)
{
	chip_free(self->c);
}

static void inject(struct test_chip *c, void (*edit)(struct TsrFaults *f))
{
	TsrFaults f;

	tsr_core_get_faults(c->core, &f);
	edit(&f);
	tsr_core_set_faults(c->core, &f);
}

static struct tsr_cmd_dma copy(uint64_t src, uint64_t dst, uint32_t n)
{
	return (struct tsr_cmd_dma){
		.hdr = HDR(TSR_OP_DMA_COPY, struct tsr_cmd_dma),
		.src = src, .dst = dst, .size = { n, 1, 1 },
	};
}

static void fail_one_dma(TsrFaults *f)
{
	f->fail_dma = 1;
}

TEST_F(f, a_failed_transfer_fails_one_job_and_the_next_succeeds)
{
	uint64_t *fence = host_ptr(self->c, FENCE_ADDR(0));
	struct tsr_completion *first, *second;

	chip_queue_job(self->c, 0, 1, &nop, sizeof(nop), 7);
	tsr_core_queue_run(self->c->core, 0);
	ASSERT_EQ(7, *fence);

	inject(self->c, fail_one_dma);
	first = chip_queue_job(self->c, 0, 1, &nop, sizeof(nop), 8);
	tsr_core_queue_run(self->c->core, 0);
	/*
	 * The first transfer is the job's descriptor fetch: no record, and
	 * the fence, which the chip never read, does not move.
	 */
	EXPECT_EQ(0, first->status);
	EXPECT_EQ(TSR_ERR_DMA, qrd(self->c, 0, TSR_QREG_LAST_ERROR));
	EXPECT_EQ(1, qrd(self->c, 0, TSR_QREG_JOBS_FAILED));
	EXPECT_EQ(2, qrd(self->c, 0, TSR_QREG_HEAD));
	EXPECT_EQ(7, *fence);
	EXPECT_EQ(7, qrd(self->c, 0, TSR_QREG_FENCE_LO));

	second = chip_queue_job(self->c, 0, 1, &nop, sizeof(nop), 9);
	tsr_core_queue_run(self->c->core, 0);
	EXPECT_EQ(TSR_JOB_STATUS_DONE, second->status);
	EXPECT_EQ(9, *fence);
}

static void poison_second_page(TsrFaults *f)
{
	f->poison_addr = 0x1000 + 0x80;
	f->poison_size = 16;
}

TEST_F(f, poisoned_hbm_fails_the_read_with_its_address)
{
	struct tsr_cmd_dma hit = copy(self->hbm_va + 0x1000, self->buf, 0x100);
	struct tsr_cmd_dma miss = copy(self->hbm_va, self->buf, 0x100);
	struct tsr_completion *comp;

	wr(self->c, TSR_REG_IRQ_ENABLE, TSR_IRQ_ECC_UNCORRECTABLE);
	inject(self->c, poison_second_page);
	comp = chip_run(self->c, &hit, sizeof(hit));
	EXPECT_EQ(TSR_ERR_ECC, comp->error);
	EXPECT_EQ(self->hbm_va + 0x1080, comp->fault_va);
	EXPECT_EQ(1, rd(self->c, TSR_REG_CNT_ECC_UE_LO));
	EXPECT_EQ(TSR_IRQ_ECC_UNCORRECTABLE, rd(self->c, TSR_REG_IRQ_STATUS));
	EXPECT_EQ(1, self->c->irqs[TSR_MSIX_VEC_DEVICE]);
	/* Other HBM reads in the same context are fine. */
	EXPECT_EQ(TSR_ERR_NONE, chip_run(self->c, &miss, sizeof(miss))->error);
	/* Writing the poisoned range is allowed; reading it still fails. */
	hit = copy(self->buf, self->hbm_va + 0x1080, 16);
	EXPECT_EQ(TSR_ERR_NONE, chip_run(self->c, &hit, sizeof(hit))->error);
}

/* An 8x8 f32 product in HBM at @va: A on its second page, B on its first. */
static struct tsr_cmd_matmul hbm_matmul(uint64_t va)
{
	return (struct tsr_cmd_matmul){
		.hdr = HDR(TSR_OP_MATMUL, struct tsr_cmd_matmul),
		.a = tensor(va + 0x1000, 8, 8, TSR_DTYPE_F32),
		.b = tensor(va, 8, 8, TSR_DTYPE_F32),
		.c = tensor(va + 0x4000, 8, 8, TSR_DTYPE_F32),
	};
}

/* Operands read straight from HBM count as HBM reads, once each. */
TEST_F(f, a_matmul_from_hbm_counts_its_operands_as_hbm_reads)
{
	struct tsr_cmd_matmul mm = hbm_matmul(self->hbm_va);
	uint32_t before = rd(self->c, TSR_REG_CNT_HBM_READ_LO);

	EXPECT_EQ(TSR_ERR_NONE, chip_run(self->c, &mm, sizeof(mm))->error);
	EXPECT_EQ(before + 2 * 8 * 8 * 4, rd(self->c, TSR_REG_CNT_HBM_READ_LO));
}

TEST_F(f, a_poisoned_matmul_operand_fails_the_matmul)
{
	struct tsr_cmd_matmul mm = hbm_matmul(self->hbm_va);
	struct tsr_completion *comp;

	inject(self->c, poison_second_page);
	comp = chip_run(self->c, &mm, sizeof(mm));
	EXPECT_EQ(TSR_ERR_ECC, comp->error);
	EXPECT_EQ(self->hbm_va + 0x1080, comp->fault_va);
	EXPECT_EQ(1, rd(self->c, TSR_REG_CNT_ECC_UE_LO));
}

/* An add read in place from HBM fails at the poisoned byte all the same. */
TEST_F(f, a_poisoned_vpu_operand_in_hbm_fails_the_command_with_its_address)
{
	struct tsr_cmd_vpu add = {
		.hdr = HDR(TSR_OP_VPU, struct tsr_cmd_vpu), .op = TSR_VPU_ADD,
		.a = tensor(self->hbm_va, 1, 1024, TSR_DTYPE_F32),
		.b = tensor(self->hbm_va + 0x1000, 1, 1024, TSR_DTYPE_F32),
		.out = tensor(self->hbm_va + 0x4000, 1, 1024, TSR_DTYPE_F32),
	};
	struct tsr_completion *comp;

	EXPECT_EQ(TSR_ERR_NONE, chip_run(self->c, &add, sizeof(add))->error);
	inject(self->c, poison_second_page);
	comp = chip_run(self->c, &add, sizeof(add));
	EXPECT_EQ(TSR_ERR_ECC, comp->error);
	EXPECT_EQ(self->hbm_va + 0x1080, comp->fault_va);
	EXPECT_EQ(1, rd(self->c, TSR_REG_CNT_ECC_UE_LO));
}

static void poison_to_the_end(TsrFaults *f)
{
	/* From 4 KiB to the end of the 64-bit space: the end wraps. */
	f->poison_addr = 0x1000;
	f->poison_size = UINT64_MAX;
}

TEST_F(f, a_poisoned_range_reaching_the_top_of_the_address_space_poisons)
{
	struct tsr_cmd_dma hit = copy(self->hbm_va + 0x3000, self->buf, 16);
	struct tsr_cmd_dma miss = copy(self->hbm_va, self->buf, 16);

	inject(self->c, poison_to_the_end);
	EXPECT_EQ(TSR_ERR_ECC, chip_run(self->c, &hit, sizeof(hit))->error);
	EXPECT_EQ(TSR_ERR_NONE, chip_run(self->c, &miss, sizeof(miss))->error);
}

static void two_correctable(TsrFaults *f)
{
	f->ecc_correctable = 2;
}

TEST_F(f, correctable_errors_are_counted_and_the_data_is_right)
{
	struct tsr_cmd_dma c = copy(self->hbm_va, self->buf, 64);
	int i;

	memset(self->c->hbm, 0x77, 64);
	inject(self->c, two_correctable);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &c, sizeof(c))->error);
	EXPECT_EQ(2, rd(self->c, TSR_REG_CNT_ECC_CE_LO));
	EXPECT_EQ(0x77, ((uint8_t *)host_ptr(self->c, self->buf))[63]);
	EXPECT_EQ(TSR_IRQ_ECC_CORRECTABLE, rd(self->c, TSR_REG_IRQ_STATUS));
}

static void drop_one_irq(TsrFaults *f)
{
	f->drop_irqs = 1;
}

TEST_F(f, a_dropped_interrupt_leaves_the_fence_and_record_in_place)
{
	struct tsr_completion *comp;

	inject(self->c, drop_one_irq);
	comp = chip_run(self->c, &nop, sizeof(nop));
	EXPECT_EQ(TSR_JOB_STATUS_DONE, comp->status);
	EXPECT_EQ(0, self->c->irqs[TSR_MSIX_VEC_QUEUE(0)]);
	EXPECT_EQ(TSR_QIRQ_JOB_DONE, qrd(self->c, 0, TSR_QREG_IRQ_STATUS));
	chip_run(self->c, &nop, sizeof(nop));
	EXPECT_EQ(1, self->c->irqs[TSR_MSIX_VEC_QUEUE(0)]);
}

static void hang_queue_0(TsrFaults *f)
{
	f->hang_queues = 1;
}

static void unhang(TsrFaults *f)
{
	f->hang_queues = 0;
}

TEST_F(f, a_hung_queue_stops_alone_until_released)
{
	struct tsr_completion *stuck, *other;
	uint32_t kicks;

	inject(self->c, hang_queue_0);
	stuck = chip_queue_job(self->c, 0, 1, &nop, sizeof(nop), 1);
	other = chip_queue_job(self->c, 1, 1, &nop, sizeof(nop), 2);
	tsr_core_queue_run(self->c->core, 0);
	tsr_core_queue_run(self->c->core, 1);
	/* The queue never took it: its record is as the driver left it. */
	EXPECT_EQ(0, stuck->status);
	EXPECT_EQ(TSR_QSTATUS_HUNG, qrd(self->c, 0, TSR_QREG_STATUS));
	EXPECT_FALSE(tsr_core_queue_pending(self->c->core, 0));
	EXPECT_EQ(TSR_JOB_STATUS_DONE, other->status);

	kicks = self->c->kicks[0];
	inject(self->c, unhang);
	EXPECT_EQ(kicks + 1, self->c->kicks[0]);
	tsr_core_queue_run(self->c->core, 0);
	EXPECT_EQ(TSR_JOB_STATUS_DONE, stuck->status);
}

TEST_F(f, a_queue_reset_clears_its_hang)
{
	inject(self->c, hang_queue_0);
	qwr(self->c, 0, TSR_QREG_CONTROL, TSR_QCTRL_RESET | TSR_QCTRL_ENABLE);
	EXPECT_NE(TSR_QSTATUS_HUNG, qrd(self->c, 0, TSR_QREG_STATUS));
	self->c->tail[0] = 0;
	EXPECT_EQ(TSR_JOB_STATUS_DONE, chip_run(self->c, &nop, sizeof(nop))->status);
}

TEST_F(f, a_fatal_error_stops_every_queue_until_reset)
{
	struct tsr_completion *comp;

	wr(self->c, TSR_REG_IRQ_ENABLE, TSR_IRQ_FATAL);
	tsr_core_raise_fatal(self->c->core);
	EXPECT_EQ(TSR_STATUS_FATAL, rd(self->c, TSR_REG_STATUS));
	EXPECT_EQ(TSR_IRQ_FATAL, rd(self->c, TSR_REG_IRQ_STATUS));
	EXPECT_EQ(1, self->c->irqs[TSR_MSIX_VEC_DEVICE]);
	comp = chip_run(self->c, &nop, sizeof(nop));
	EXPECT_EQ(0, comp->status);

	wr(self->c, TSR_REG_RESET, TSR_RESET_MAGIC);
	EXPECT_EQ(TSR_STATUS_READY, rd(self->c, TSR_REG_STATUS));
}

static void hang_after_two(TsrFaults *f)
{
	f->hang_after = 2;
}

static void *run_queue_0(void *chip)
{
	tsr_core_queue_run(((struct test_chip *)chip)->core, 0);
	return NULL;
}

static struct tsr_cmd_sem sem_inc(uint64_t va)
{
	return (struct tsr_cmd_sem){
		.hdr = HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem),
		.va = va, .value = 1,
	};
}

/*
 * The job hangs in the middle: its first two commands take effect, the
 * third never runs, until the queue is reset.  The fault is the next
 * job's alone: the job after runs whole.
 */
TEST_F(f, a_job_hangs_after_n_commands_until_its_queue_is_reset)
{
	struct tsr_cmd_sem cmds[3] = {
		sem_inc(self->buf), sem_inc(self->buf + 8), sem_inc(self->buf + 16),
	};
	const struct timespec tick = { 0, 100000 };
	uint64_t *words = host_ptr(self->c, self->buf);
	struct tsr_completion *hung;
	TsrFaults after;
	pthread_t t;

	inject(self->c, hang_after_two);
	hung = chip_queue_job(self->c, 0, 1, cmds, sizeof(cmds), 1);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_queue_0, self->c));
	while (!__atomic_load_n(&words[1], __ATOMIC_ACQUIRE))
		nanosleep(&tick, NULL);
	tsr_core_get_faults(self->c->core, &after);
	EXPECT_EQ(0, after.hang_after);
	EXPECT_EQ(TSR_QSTATUS_RUNNING, qrd(self->c, 0, TSR_QREG_STATUS));
	EXPECT_EQ(0, qrd(self->c, 0, TSR_QREG_HEAD));

	qwr(self->c, 0, TSR_QREG_CONTROL, TSR_QCTRL_RESET | TSR_QCTRL_ENABLE);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(1, words[0]);
	EXPECT_EQ(1, words[1]);
	EXPECT_EQ(0, words[2]) TH_LOG("the command after the hang ran");
	/* Its record stays as it started: RUNNING, with its fence. */
	EXPECT_EQ(TSR_JOB_STATUS_RUNNING, hung->status)
		TH_LOG("the reset job wrote its record");
	EXPECT_EQ(1, hung->fence);

	self->c->tail[0] = 0;
	EXPECT_EQ(TSR_JOB_STATUS_DONE,
		  chip_run(self->c, cmds, sizeof(cmds))->status);
	EXPECT_EQ(2, words[0]);
	EXPECT_EQ(1, words[2]);
}

/* A job with no command after the Nth hangs before it ends. */
TEST_F(f, a_job_shorter_than_n_hangs_before_it_ends)
{
	struct tsr_cmd_sem cmd = sem_inc(self->buf);
	const struct timespec tick = { 0, 100000 };
	uint64_t *words = host_ptr(self->c, self->buf);
	struct tsr_completion *hung;
	pthread_t t;

	inject(self->c, hang_after_two);
	hung = chip_queue_job(self->c, 0, 1, &cmd, sizeof(cmd), 1);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_queue_0, self->c));
	while (!__atomic_load_n(&words[0], __ATOMIC_ACQUIRE))
		nanosleep(&tick, NULL);
	EXPECT_EQ(TSR_JOB_STATUS_RUNNING, hung->status);
	EXPECT_EQ(TSR_NO_COMMAND, hung->failed_cmd);
	EXPECT_EQ(TSR_QSTATUS_RUNNING, qrd(self->c, 0, TSR_QREG_STATUS));
	qwr(self->c, 0, TSR_QREG_CONTROL, TSR_QCTRL_RESET | TSR_QCTRL_ENABLE);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(TSR_JOB_STATUS_RUNNING, hung->status);
}

static void everything(TsrFaults *f)
{
	f->hang_queues = 3;
	f->fail_dma = 5;
	f->poison_size = 4096;
	f->ecc_correctable = 1;
	f->drop_irqs = 9;
	f->hang_after = 4;
}

TEST_F(f, a_reset_clears_every_fault)
{
	TsrFaults after;

	inject(self->c, everything);
	tsr_core_reset(self->c->core);
	tsr_core_get_faults(self->c->core, &after);
	EXPECT_EQ(0, after.hang_queues | after.fail_dma | after.ecc_correctable |
		     after.drop_irqs | after.hang_after);
	EXPECT_EQ(0, after.poison_size);
}

TEST_F(f, the_debug_block_is_inert_unless_enabled)
{
	TsrFaults after;

	wr(self->c, TSR_REG_DBG_FAIL_DMA, 4);
	wr(self->c, TSR_REG_DBG_FATAL, 1);
	EXPECT_EQ(0, rd(self->c, TSR_REG_DBG_FAIL_DMA));
	tsr_core_get_faults(self->c->core, &after);
	EXPECT_EQ(0, after.fail_dma);
	EXPECT_EQ(TSR_STATUS_READY, rd(self->c, TSR_REG_STATUS));
}

TEST(the_debug_block_injects_what_the_host_can)
{
	struct test_chip *c;
	TsrConfig cfg;
	TsrFaults f;

	c = calloc(1, sizeof(*c));
	c->sysmem = calloc(1, SYSMEM_SIZE);
	c->hbm = calloc(1, HBM_SIZE);
	ASSERT_EQ(0, tsr_preset_lookup("v5e", &cfg));
	cfg.hbm_size = HBM_SIZE;
	cfg.debug_regs = true;
	c->core = tsr_core_new(&cfg, c->hbm, &chip_ops, c);
	ASSERT_NE(NULL, c->core);

	EXPECT_EQ(TSR_CAP_DEBUG_REGS, rd(c, TSR_REG_CAPS) & TSR_CAP_DEBUG_REGS);
	wr(c, TSR_REG_DBG_FAIL_DMA, 4);
	wr(c, TSR_REG_DBG_POISON_LO, 0x2000);
	wr(c, TSR_REG_DBG_POISON_SIZE, 64);
	wr(c, TSR_REG_DBG_DROP_IRQS, 2);
	wr(c, TSR_REG_DBG_HANG_QUEUES, 0xff);
	tsr_core_get_faults(c->core, &f);
	EXPECT_EQ(4, f.fail_dma);
	EXPECT_EQ(0x2000, f.poison_addr);
	EXPECT_EQ(64, f.poison_size);
	EXPECT_EQ(2, f.drop_irqs);
	/* Only queues the chip has can hang. */
	EXPECT_EQ(0xf, f.hang_queues);
	EXPECT_EQ(4, rd(c, TSR_REG_DBG_FAIL_DMA));
	wr(c, TSR_REG_DBG_FATAL, 1);
	EXPECT_EQ(TSR_STATUS_FATAL, rd(c, TSR_REG_STATUS));
	chip_free(c);
}

TEST_HARNESS_MAIN
