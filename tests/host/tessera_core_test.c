// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the Tessera chip core: registers, presets, the ping,
 * reset.  Driven through the core's narrow interface by a test host.
 */
#include <math.h>

#include "kselftest_harness.h"

#include "tessera_chip.h"

FIXTURE(core) {
	struct test_chip *c;
};

FIXTURE_SETUP(core)
{
	self->c = chip_new("v4");
}

FIXTURE_TEARDOWN(core)
{
	chip_free(self->c);
}

TEST_F(core, identity_registers_read_their_documented_values)
{
	EXPECT_EQ(TSR_CHIP_ID, rd(self->c, TSR_REG_CHIP_ID));
	EXPECT_EQ(TSR_VERSION(TSR_DEVICE_VERSION_MAJOR, TSR_DEVICE_VERSION_MINOR),
		  rd(self->c, TSR_REG_DEVICE_VERSION));
	EXPECT_EQ(TSR_CAP_BF16 | TSR_CAP_INT8 | TSR_CAP_ICI | TSR_CAP_VPU_I32 |
		  TSR_CAP_TRACE | TSR_CAP_SEM_ABORT | TSR_CAP_SEM_LINKS |
		  TSR_CAP_SPARSECORE,
		  rd(self->c, TSR_REG_CAPS));
	EXPECT_EQ(TSR_STATUS_READY, rd(self->c, TSR_REG_STATUS));
}

TEST_F(core, configuration_registers_show_the_preset)
{
	EXPECT_EQ(TSR_PRESET_V4, rd(self->c, TSR_REG_PRESET));
	EXPECT_EQ(2, rd(self->c, TSR_REG_TENSORCORES));
	EXPECT_EQ(4, rd(self->c, TSR_REG_MXUS_PER_CORE));
	EXPECT_EQ(128, rd(self->c, TSR_REG_MXU_DIM));
	EXPECT_EQ(8, rd(self->c, TSR_REG_VPU_SUBLANES));
	EXPECT_EQ(128, rd(self->c, TSR_REG_VPU_LANES));
	EXPECT_EQ(1050, rd(self->c, TSR_REG_CLOCK_MHZ));
	EXPECT_EQ(1200, rd(self->c, TSR_REG_HBM_GBPS));
	EXPECT_EQ(HBM_SIZE, rd(self->c, TSR_REG_HBM_SIZE_LO));
	EXPECT_EQ(0, rd(self->c, TSR_REG_HBM_SIZE_HI));
	EXPECT_EQ(4, rd(self->c, TSR_REG_NUM_QUEUES));
	EXPECT_EQ(TSR_MAX_CONTEXTS, rd(self->c, TSR_REG_MAX_CONTEXTS));
	EXPECT_EQ(6, rd(self->c, TSR_REG_ICI_PORTS));
}

TEST_F(core, identity_registers_ignore_writes)
{
	wr(self->c, TSR_REG_CHIP_ID, 0xdeadbeef);
	wr(self->c, TSR_REG_TENSORCORES, 7);
	EXPECT_EQ(TSR_CHIP_ID, rd(self->c, TSR_REG_CHIP_ID));
	EXPECT_EQ(2, rd(self->c, TSR_REG_TENSORCORES));
}

TEST_F(core, scratch_holds_what_was_written)
{
	static const uint32_t values[] = { 0, 1, 0x5a5aa5a5, 0xffffffff };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(values); i++) {
		wr(self->c, TSR_REG_SCRATCH, values[i]);
		EXPECT_EQ(values[i], rd(self->c, TSR_REG_SCRATCH));
	}
}

TEST_F(core, reserved_offsets_read_zero_and_ignore_writes)
{
	static const uint32_t offsets[] = {
		0x0060, 0x0ffc, TSR_BLOCK_DEBUG, TSR_BLOCK_ICI,
		TSR_BLOCK_SPARSECORE + 0x14, TSR_QUEUE_BASE(5),
		TSR_BAR0_REGS_SIZE - 4,
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(offsets); i++) {
		wr(self->c, offsets[i], 0xffffffff);
		EXPECT_EQ(0, rd(self->c, offsets[i])) TH_LOG("0x%x", offsets[i]);
	}
	EXPECT_EQ(0, self->c->schedules);
}

TEST_F(core, ping_is_acknowledged_after_the_write_returns)
{
	wr(self->c, TSR_REG_IRQ_ENABLE, TSR_IRQ_PING);
	wr(self->c, TSR_REG_PING, 0x1234abcd);

	/* Nothing happens inside the register write itself. */
	EXPECT_EQ(1, self->c->schedules);
	EXPECT_EQ(0, self->c->irqs[TSR_MSIX_VEC_DEVICE]);
	EXPECT_EQ(0, rd(self->c, TSR_REG_PING_ACK));

	tsr_core_run(self->c->core);
	EXPECT_EQ(1, self->c->irqs[TSR_MSIX_VEC_DEVICE]);
	EXPECT_EQ(0x1234abcd, rd(self->c, TSR_REG_PING_ACK));
	EXPECT_EQ(1, rd(self->c, TSR_REG_PING_COUNT));
	EXPECT_EQ(TSR_IRQ_PING, rd(self->c, TSR_REG_IRQ_STATUS));
}

TEST_F(core, run_without_pending_work_raises_nothing)
{
	wr(self->c, TSR_REG_IRQ_ENABLE, TSR_IRQ_ALL);
	tsr_core_run(self->c->core);
	EXPECT_EQ(0, self->c->irqs[TSR_MSIX_VEC_DEVICE]);
	EXPECT_EQ(0, rd(self->c, TSR_REG_PING_COUNT));
}

TEST_F(core, disabled_ping_latches_status_and_is_delivered_on_enable)
{
	wr(self->c, TSR_REG_PING, 7);
	tsr_core_run(self->c->core);
	EXPECT_EQ(0, self->c->irqs[TSR_MSIX_VEC_DEVICE]);
	EXPECT_EQ(TSR_IRQ_PING, rd(self->c, TSR_REG_IRQ_STATUS));

	wr(self->c, TSR_REG_IRQ_ENABLE, TSR_IRQ_PING);
	EXPECT_EQ(1, self->c->irqs[TSR_MSIX_VEC_DEVICE]);
}

TEST_F(core, irq_status_is_write_one_to_clear)
{
	wr(self->c, TSR_REG_PING, 1);
	tsr_core_run(self->c->core);
	ASSERT_EQ(TSR_IRQ_PING, rd(self->c, TSR_REG_IRQ_STATUS));

	wr(self->c, TSR_REG_IRQ_STATUS, 0);
	EXPECT_EQ(TSR_IRQ_PING, rd(self->c, TSR_REG_IRQ_STATUS));
	wr(self->c, TSR_REG_IRQ_STATUS, TSR_IRQ_PING);
	EXPECT_EQ(0, rd(self->c, TSR_REG_IRQ_STATUS));
}

TEST_F(core, irq_enable_keeps_only_defined_bits)
{
	wr(self->c, TSR_REG_IRQ_ENABLE, 0xffffffff);
	EXPECT_EQ(TSR_IRQ_ALL, rd(self->c, TSR_REG_IRQ_ENABLE));
}

TEST_F(core, pings_written_before_the_chip_runs_coalesce)
{
	wr(self->c, TSR_REG_IRQ_ENABLE, TSR_IRQ_PING);
	wr(self->c, TSR_REG_PING, 20);
	wr(self->c, TSR_REG_PING, 21);
	tsr_core_run(self->c->core);
	EXPECT_EQ(1, self->c->irqs[TSR_MSIX_VEC_DEVICE]);
	EXPECT_EQ(21, rd(self->c, TSR_REG_PING_ACK));
	EXPECT_EQ(1, rd(self->c, TSR_REG_PING_COUNT));
}

TEST_F(core, reset_register_needs_the_magic_value)
{
	wr(self->c, TSR_REG_SCRATCH, 0x55);
	wr(self->c, TSR_REG_RESET, 1);
	EXPECT_EQ(0x55, rd(self->c, TSR_REG_SCRATCH));
	wr(self->c, TSR_REG_RESET, TSR_RESET_MAGIC);
	EXPECT_EQ(0, rd(self->c, TSR_REG_SCRATCH));
	EXPECT_EQ(1, rd(self->c, TSR_REG_CNT_RESETS_LO));
}

TEST_F(core, reset_returns_every_register_to_its_reset_value)
{
	wr(self->c, TSR_REG_SCRATCH, 0x55);
	wr(self->c, TSR_REG_IRQ_ENABLE, TSR_IRQ_ALL);
	wr(self->c, TSR_REG_PING, 99);
	tsr_core_run(self->c->core);
	/* A ping written just before reset must not survive it. */
	wr(self->c, TSR_REG_PING, 100);

	tsr_core_reset(self->c->core);
	self->c->irqs[TSR_MSIX_VEC_DEVICE] = 0;
	tsr_core_run(self->c->core);

	EXPECT_EQ(0, self->c->irqs[TSR_MSIX_VEC_DEVICE]);
	EXPECT_EQ(0, rd(self->c, TSR_REG_SCRATCH));
	EXPECT_EQ(0, rd(self->c, TSR_REG_IRQ_ENABLE));
	EXPECT_EQ(0, rd(self->c, TSR_REG_IRQ_STATUS));
	EXPECT_EQ(0, rd(self->c, TSR_REG_PING_ACK));
	EXPECT_EQ(0, rd(self->c, TSR_REG_PING_COUNT));
	EXPECT_EQ(0, rd(self->c, TSR_REG_MMU_CTX_TABLE_LO));
	EXPECT_EQ(0, qrd(self->c, 0, TSR_QREG_RING_SIZE));
	EXPECT_EQ(TSR_QSTATUS_DISABLED, qrd(self->c, 0, TSR_QREG_STATUS));
	EXPECT_EQ(TSR_CHIP_ID, rd(self->c, TSR_REG_CHIP_ID));
}

TEST_F(core, queue_registers_beyond_the_chips_queues_are_inert)
{
	uint32_t kicks[TSR_MAX_QUEUES];
	unsigned int q, reg;

	memcpy(kicks, self->c->kicks, sizeof(kicks));
	/* The queue block has room for 16 queues; this chip has 4. */
	for (q = 4; q < 16; q++)
		for (reg = 0; reg < TSR_QUEUE_STRIDE; reg += 4) {
			wr(self->c, TSR_QUEUE_BASE(q) + reg, 0xffffffff);
			ASSERT_EQ(0, rd(self->c, TSR_QUEUE_BASE(q) + reg))
				TH_LOG("queue %u register 0x%x", q, reg);
		}
	EXPECT_EQ(0, memcmp(kicks, self->c->kicks, sizeof(kicks)));
	EXPECT_NE(NULL, strstr(self->c->guest_error, "the chip has 4 queues"));
}

TEST_F(core, rejected_register_values_are_reported_as_guest_errors)
{
	static const struct {
		uint32_t reg, value;
		const char *says;
	} cases[] = {
		{ TSR_QUEUE_BASE(0) + TSR_QREG_RING_SIZE, 64,
		  "queue 0: ring register 0x08 <- 0x40 ignored: the queue is enabled" },
		{ TSR_QUEUE_BASE(0) + TSR_QREG_TAIL, RING_SIZE,
		  "queue 0: TAIL 16 ignored: RING_SIZE is 16" },
		{ TSR_QUEUE_BASE(1) + TSR_QREG_CONTROL, 0x80000001,
		  "queue 1: CONTROL 0x80000001 has unknown bits" },
		{ TSR_QUEUE_BASE(2) + TSR_QREG_FENCE_ADDR_LO, 0x3014,
		  "queue 2: FENCE_ADDR_LO 0x3014 is not 8-byte aligned" },
		{ TSR_QUEUE_BASE(0) + TSR_QREG_HEAD, 1,
		  "write 0x1 to read-only or reserved register 0x2014 ignored" },
		{ TSR_REG_CHIP_ID, 1,
		  "write 0x1 to read-only or reserved register 0x0 ignored" },
		{ TSR_BLOCK_ICI, 2,
		  "ICI register 0x8000: write 0x2 refused" },
		{ TSR_REG_RESET, 1, "RESET 0x1 ignored: not the magic value" },
		{ TSR_REG_MMU_CTX_TABLE_LO, 0x1010,
		  "MMU_CTX_TABLE_LO 0x1010 is not 4 KiB aligned" },
		{ TSR_REG_MMU_CTX_COUNT, 300, "MMU_CTX_COUNT 300 is above 256" },
		{ TSR_REG_DBG_FAIL_DMA, 1,
		  "the debug block is off (debug-regs)" },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		uint32_t before = self->c->guest_errors;

		wr(self->c, cases[i].reg, cases[i].value);
		EXPECT_EQ(before + 1, self->c->guest_errors) TH_LOG("case %u", i);
		EXPECT_NE(NULL, strstr(self->c->guest_error, cases[i].says))
			TH_LOG("case %u: \"%s\"", i, self->c->guest_error);
	}
}

TEST_F(core, a_driver_programming_the_chip_logs_nothing)
{
	/* chip_new() programmed every queue, the MMU and the interrupts. */
	wr(self->c, TSR_REG_IRQ_ENABLE, TSR_IRQ_ALL);
	wr(self->c, TSR_REG_IRQ_STATUS, TSR_IRQ_ALL);
	wr(self->c, TSR_REG_SCRATCH, 1);
	wr(self->c, TSR_REG_MMU_INVALIDATE, TSR_MMU_INVALIDATE_ALL);
	qwr(self->c, 0, TSR_QREG_CONTROL, TSR_QCTRL_RESET);
	qwr(self->c, 0, TSR_QREG_RING_SIZE, 64);
	qwr(self->c, 0, TSR_QREG_CONTROL, TSR_QCTRL_ENABLE);
	wr(self->c, TSR_REG_RESET, TSR_RESET_MAGIC);
	EXPECT_EQ(0, self->c->guest_errors) TH_LOG("%s", self->c->guest_error);
}

/* Presets, after the public figures: peak bf16 FLOP/s per chip. */
TEST(presets_reach_their_published_peak)
{
	static const struct {
		const char *name;
		double peak;
	} want[] = {
		{ "v2", 4.6e13 }, { "v3", 1.23e14 }, { "v4", 2.75e14 },
		{ "v5e", 1.97e14 }, { "v5p", 4.59e14 }, { "v6e", 9.18e14 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(want); i++) {
		TsrConfig cfg;
		const char *why;

		ASSERT_EQ(0, tsr_preset_lookup(want[i].name, &cfg));
		EXPECT_EQ(0, tsr_config_check(&cfg, &why)) TH_LOG("%s", why);
		EXPECT_GT(0.01, fabs(tsr_config_peak_flops(&cfg) / want[i].peak - 1))
			TH_LOG("%s: %g", want[i].name, tsr_config_peak_flops(&cfg));
	}
}

TEST(unknown_preset_is_refused)
{
	TsrConfig cfg;

	EXPECT_EQ(-1, tsr_preset_lookup("v9", &cfg));
	EXPECT_EQ(-1, tsr_preset_lookup("", &cfg));
}

TEST(invalid_configurations_are_refused_with_a_reason)
{
	TsrConfig cfg;
	const char *why = NULL;

	ASSERT_EQ(0, tsr_preset_lookup("v5e", &cfg));
	cfg.hbm_size = (256u << 20) + 4096;
	EXPECT_EQ(-1, tsr_config_check(&cfg, &why));
	EXPECT_NE(NULL, strstr(why, "hbm-size"));

	ASSERT_EQ(0, tsr_preset_lookup("v5e", &cfg));
	cfg.num_queues = TSR_MAX_QUEUES + 1;
	EXPECT_EQ(-1, tsr_config_check(&cfg, &why));
	EXPECT_NE(NULL, strstr(why, "queues"));

	ASSERT_EQ(0, tsr_preset_lookup("v5e", &cfg));
	cfg.mxu_dim = 100;
	EXPECT_EQ(-1, tsr_config_check(&cfg, &why));
	EXPECT_NE(NULL, strstr(why, "mxu-dim"));
	EXPECT_EQ(NULL, tsr_core_new(&cfg, (uint8_t *)&cfg, NULL, NULL));
}

TEST_HARNESS_MAIN
