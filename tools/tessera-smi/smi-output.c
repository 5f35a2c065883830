// SPDX-License-Identifier: MIT
/*
 * tessera-smi: a report as tables or, with --json, as one JSON object.
 * Documentation/tessera-smi.md describes both.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "smi.h"

/* ------------------------------------------------------------ naming */

static const char *const port_directions[TSR_ICI_MAX_PORTS] = {
	"+x", "-x", "+y", "-y", "+z", "-z",
};

static bool port_wired(const struct accel_device_info *info, unsigned int p)
{
	return info->ports_wired & (1u << p);
}

/* Whether a port in @state has heard its peer: the peer fields mean it. */
static bool peer_known(uint32_t state)
{
	return state == TSR_ICI_STATE_UP || state == TSR_ICI_STATE_MISWIRED ||
	       state == TSR_ICI_STATE_FOREIGN || state == TSR_ICI_STATE_DOWN;
}

/* Ports of the chip that have a socket, and of those, the ones up. */
static void count_links(const struct device_status *st, unsigned int *wired,
			unsigned int *up)
{
	unsigned int p;

	*wired = *up = 0;
	for (p = 0; p < st->info.ici_ports && p < TSR_ICI_MAX_PORTS; p++) {
		if (!port_wired(&st->info, p))
			continue;
		(*wired)++;
		*up += st->links[p].port.state == TSR_ICI_STATE_UP;
	}
}

/* The links as a whole: "none", "unknown", "unwired", "up" or "down". */
static const char *links_state(const struct device_status *st)
{
	unsigned int wired, up;

	if (!st->info.ici_ports)
		return "none";
	count_links(st, &wired, &up);
	if (!wired)
		return "unwired";
	return up == wired ? "up" : "down";
}

/* The wrapped dimensions, as the QEMU property wrap spells them: "xy". */
static void format_wrap(uint32_t wrap, char *buf, size_t len)
{
	size_t n = 0;
	unsigned int d;

	for (d = 0; d < TSR_ICI_MAX_DIMS && n + 1 < len; d++)
		if (wrap & (1u << d))
			buf[n++] = "xyz"[d];
	buf[n] = '\0';
}

static void format_coords(const struct accel_coords *c, char *buf, size_t len)
{
	snprintf(buf, len, "%u,%u,%u", c->c[0], c->c[1], c->c[2]);
}

static void format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return;
	}
	while (v >= 1024 && u + 1 < (int)ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	if (v == floor(v))
		snprintf(buf, len, "%.0f %s", v, units[u]);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
}

/* ------------------------------------------------------------ processes */

static uint64_t engine_total_ns(const struct client *c)
{
	uint64_t total = 0;
	unsigned int q;

	for (q = 0; q < c->queues; q++)
		total += c->engine_ns[q];
	return total;
}

/* Processes with a file of the chip at @pci open. */
static unsigned int processes_of(const struct client_list *list, const char *pci)
{
	unsigned int n = 0;
	size_t i, j;

	for (i = 0; i < list->count; i++) {
		const struct client *c = &list->items[i];

		if (strcmp(c->pdev, pci))
			continue;
		for (j = 0; j < i; j++)
			if (list->items[j].pid == c->pid &&
			    !strcmp(list->items[j].pdev, pci))
				break;
		n += j == i;
	}
	return n;
}

/* ------------------------------------------------------------ JSON */

static void add_u64(json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

static void add_string(json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, json_object_new_string(v));
}

/* A number printed with @decimals digits after the point. */
static void add_fixed(json_object *o, const char *key, double v, int decimals)
{
	char text[32];

	snprintf(text, sizeof(text), "%.*f", decimals, v);
	json_object_object_add(o, key, json_object_new_double_s(v, text));
}

static json_object *json_u32_array(const uint32_t *v, size_t n)
{
	json_object *a = json_object_new_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_uint64(v[i]));
	return a;
}

static json_object *json_versions(const struct accel_device_info *info)
{
	json_object *o = json_object_new_object();
	char text[48];

	add_string(o, "driver_name", info->driver_name);
	snprintf(text, sizeof(text), "%d.%d.%d", info->driver_major,
		 info->driver_minor, info->driver_patch);
	add_string(o, "driver", text);
	snprintf(text, sizeof(text), "%d.%d", info->driver_major,
		 info->driver_minor);
	add_string(o, "uapi", text);
	snprintf(text, sizeof(text), "%u.%u", info->device_version_major,
		 info->device_version_minor);
	add_string(o, "device_model", text);
	add_u64(o, "chip_id", info->chip_id);
	add_string(o, "libaccel", accel_version_string());
	return o;
}

static json_object *json_config(const struct accel_device_info *info)
{
	json_object *o = json_object_new_object();

	add_string(o, "preset", accel_preset_name(info->preset));
	add_u64(o, "preset_id", info->preset);
	add_u64(o, "tensorcores", info->tensorcores);
	add_u64(o, "mxus_per_core", info->mxus_per_core);
	add_u64(o, "mxu_dim", info->mxu_dim);
	add_u64(o, "vpu_sublanes", info->vpu_sublanes);
	add_u64(o, "vpu_lanes", info->vpu_lanes);
	add_u64(o, "vmem_mib", info->vmem_mib);
	add_u64(o, "clock_mhz", info->clock_mhz);
	add_u64(o, "hbm_gbps", info->hbm_gbps);
	add_u64(o, "host_dma_gbps", info->host_dma_gbps);
	add_u64(o, "num_queues", info->num_queues);
	add_u64(o, "max_contexts", info->max_contexts);
	add_u64(o, "caps", info->caps);
	add_fixed(o, "peak_bf16_tflops", info->peak_bf16_flops / 1e12, 1);
	add_u64(o, "sparsecores", info->sparsecores);
	add_u64(o, "sc_tiles", info->sc_tiles);
	add_u64(o, "sc_simd_f32", info->sc_simd_f32);
	add_u64(o, "sc_simd_bf16", info->sc_simd_bf16);
	add_u64(o, "sc_spmem_kib", info->sc_spmem_kib);
	return o;
}

static json_object *json_pci(const struct accel_device_info *info)
{
	json_object *o = json_object_new_object();

	add_u64(o, "vendor", info->pci_vendor);
	add_u64(o, "device", info->pci_device);
	add_u64(o, "revision", info->pci_revision);
	return o;
}

static json_object *json_hbm(const struct accel_device_info *info)
{
	json_object *o = json_object_new_object();

	add_u64(o, "total_bytes", info->hbm_size);
	add_u64(o, "used_bytes", info->hbm_size - info->hbm_free);
	add_u64(o, "free_bytes", info->hbm_free);
	return o;
}

static json_object *json_utilization(const struct device_status *st)
{
	const struct utilization *u = &st->util;
	json_object *o;
	char key[32];
	size_t e;

	if (!st->have_util)
		return NULL;	/* JSON null: no window to measure over */
	o = json_object_new_object();
	add_fixed(o, "interval_s", u->window_s, 3);
	add_u64(o, "clock_cycles", u->clock_cycles);
	add_fixed(o, "modeled_us", (double)u->clock_cycles / st->info.clock_mhz, 3);
	for (e = 0; e < ENGINES; e++) {
		snprintf(key, sizeof(key), "%s_busy_cycles", engines[e]);
		add_u64(o, key, u->busy_cycles[e]);
		snprintf(key, sizeof(key), "%s_percent", engines[e]);
		add_fixed(o, key, u->percent[e], 2);
	}
	json_object_object_add(o, "chip_reset", json_object_new_boolean(u->chip_reset));
	return o;
}

/* The @n counters of @table, read from @from, by name. */
static json_object *json_counters(const struct chip_counter *table, size_t n,
				  const void *from)
{
	json_object *o = json_object_new_object();
	size_t i;

	for (i = 0; i < n; i++)
		add_u64(o, table[i].name, counter_at(from, table[i].offset));
	return o;
}

static json_object *json_driver_counters(const struct device_status *st)
{
	json_object *o = json_object_new_object();
	int i;

	for (i = 0; i < DRIVER_COUNTERS; i++)
		add_u64(o, driver_counter_names[i], st->driver[i]);
	return o;
}

static json_object *json_peer(const struct accel_ici_port *port)
{
	json_object *o = json_object_new_object();
	json_object *coords = json_object_new_array();
	unsigned int d;

	for (d = 0; d < TSR_ICI_MAX_DIMS; d++)
		json_object_array_add(coords, json_object_new_uint64(port->peer.c[d]));
	json_object_object_add(o, "coords", coords);
	add_u64(o, "port", port->peer_port);
	add_u64(o, "slice_id", port->peer_slice);
	return o;
}

static json_object *json_port(const struct device_status *st, unsigned int p)
{
	const struct accel_link_info *link = &st->links[p];
	json_object *o = json_object_new_object();

	add_u64(o, "port", p);
	add_string(o, "direction", port_directions[p]);
	json_object_object_add(o, "wired",
			       json_object_new_boolean(port_wired(&st->info, p)));
	add_string(o, "state", accel_link_state_name(link->port.state));
	add_string(o, "transport", st->transport[p]);
	json_object_object_add(o, "peer", peer_known(link->port.state) ?
			       json_peer(&link->port) : NULL);
	json_object_object_add(o, "counters",
			       json_counters(link_counters,
					     ARRAY_SIZE(link_counters), link));
	return o;
}

static json_object *json_slice(const struct accel_device_info *info)
{
	json_object *o = json_object_new_object();
	char wrap[TSR_ICI_MAX_DIMS + 1];

	format_wrap(info->wrap, wrap, sizeof(wrap));
	add_u64(o, "id", info->slice_id);
	add_u64(o, "chips", info->slice_chips);
	add_u64(o, "index", info->slice_index);
	json_object_object_add(o, "topology", json_u32_array(info->topology, 3));
	json_object_object_add(o, "coords", json_u32_array(info->coords, 3));
	add_string(o, "wrap", wrap);
	add_u64(o, "max_windows", info->max_windows);
	return o;
}

static json_object *json_links(const struct device_status *st)
{
	const struct accel_device_info *info = &st->info;
	json_object *o = json_object_new_object();
	json_object *ports = json_object_new_array();
	unsigned int p, wired, up;

	count_links(st, &wired, &up);
	add_u64(o, "ici_ports", info->ici_ports);
	add_u64(o, "ici_link_gbps", info->ici_link_gbps);
	add_u64(o, "ici_link_latency_ns", info->ici_link_latency_ns);
	add_u64(o, "wired", wired);
	add_u64(o, "connected", up);
	add_string(o, "state", links_state(st));
	for (p = 0; p < info->ici_ports && p < TSR_ICI_MAX_PORTS; p++)
		json_object_array_add(ports, json_port(st, p));
	json_object_object_add(o, "ports", ports);
	json_object_object_add(o, "slice", json_slice(info));
	return o;
}

static json_object *json_memory(const struct client *c)
{
	json_object *o = json_object_new_object();
	char key[32];
	int r, s;

	for (r = 0; r < REGIONS; r++) {
		json_object *region = json_object_new_object();

		for (s = 0; s < STATS; s++) {
			snprintf(key, sizeof(key), "%s_bytes", stat_names[s]);
			add_u64(region, key, c->memory[r][s]);
		}
		json_object_object_add(o, region_names[r], region);
	}
	return o;
}

static json_object *json_client(const struct client *c)
{
	json_object *o = json_object_new_object();
	json_object *engine = json_object_new_array();
	unsigned int q;

	json_object_object_add(o, "pid", json_object_new_int(c->pid));
	add_string(o, "name", c->comm);
	add_u64(o, "client_id", c->client_id);
	json_object_object_add(o, "memory", json_memory(c));
	for (q = 0; q < c->queues; q++)
		json_object_array_add(engine, json_object_new_uint64(c->engine_ns[q]));
	json_object_object_add(o, "engine_ns", engine);
	add_u64(o, "engine_total_ns", engine_total_ns(c));
	return o;
}

static json_object *json_processes(const struct client_list *clients,
				   const char *pci)
{
	json_object *a = json_object_new_array();
	size_t i;

	for (i = 0; i < clients->count; i++)
		if (!strcmp(clients->items[i].pdev, pci))
			json_object_array_add(a, json_client(&clients->items[i]));
	return a;
}

static json_object *json_device(const struct device_status *st,
				const struct client_list *clients)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "index", st->device->index < 0 ? NULL :
			       json_object_new_int(st->device->index));
	add_string(o, "pci_address", st->device->pci);
	if (st->error[0]) {
		add_string(o, "error", st->error);
		return o;
	}
	add_u64(o, "minor", st->info.minor);
	json_object_object_add(o, "pci", json_pci(&st->info));
	json_object_object_add(o, "versions", json_versions(&st->info));
	json_object_object_add(o, "config", json_config(&st->info));
	json_object_object_add(o, "hbm", json_hbm(&st->info));
	json_object_object_add(o, "utilization", json_utilization(st));
	json_object_object_add(o, "chip_counters",
			       json_counters(chip_counters,
					     ARRAY_SIZE(chip_counters),
					     &st->sample.counters));
	json_object_object_add(o, "driver_counters", json_driver_counters(st));
	add_u64(o, "irq_count", st->info.irq_count);
	add_u64(o, "msix_vectors", st->info.msix_vectors);
	json_object_object_add(o, "links", json_links(st));
	json_object_object_add(o, "processes",
			       json_processes(clients, st->device->pci));
	return o;
}

void print_json(unsigned long report, const char *timestamp,
		       const struct device_status *st, size_t n,
		       const struct client_list *clients)
{
	json_object *o = json_object_new_object();
	json_object *versions = json_object_new_object();
	json_object *devices = json_object_new_array();
	char version[32];
	size_t i;

	add_u64(o, "report", report);
	add_string(o, "timestamp", timestamp);
	snprintf(version, sizeof(version), "%d.%d.%d", ACCEL_VERSION_MAJOR,
		 ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH);
	add_string(versions, "tessera_smi", version);
	add_string(versions, "libaccel", accel_version_string());
	json_object_object_add(o, "versions", versions);
	for (i = 0; i < n; i++)
		json_object_array_add(devices, json_device(&st[i], clients));
	json_object_object_add(o, "devices", devices);
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

/* ------------------------------------------------------------ tables */

/* The device's index as text, "?" if unknown. */
const char *index_text(const struct device *d, char *buf, size_t len)
{
	if (d->index < 0)
		return "?";
	snprintf(buf, len, "%d", d->index);
	return buf;
}

static void print_device_row(const struct device_status *st,
			     const struct client_list *clients)
{
	const struct accel_device_info *info = &st->info;
	char used[24], total[24], hbm[56];
	size_t e;

	format_bytes(info->hbm_size - info->hbm_free, used, sizeof(used));
	format_bytes(info->hbm_size, total, sizeof(total));
	snprintf(hbm, sizeof(hbm), "%s / %s", used, total);
	printf("%3d  %-12s  %-6s  %5u  %6u  %-21s", st->device->index,
	       st->device->pci, accel_preset_name(info->preset), info->tensorcores,
	       info->num_queues, hbm);
	for (e = 0; e < ENGINES; e++) {
		if (st->have_util)
			printf("  %5.1f", st->util.percent[e]);
		else
			printf("  %5s", "-");
	}
	printf("  %5u\n", processes_of(clients, st->device->pci));
}

static void print_devices(const struct device_status *st, size_t n,
			  const struct client_list *clients)
{
	char index[16];
	size_t i;

	printf("DEV  PCI ADDRESS   PRESET  CORES  QUEUES  HBM USED / TOTAL        MXU%%   VPU%%   DMA%%  PROCS\n");
	for (i = 0; i < n; i++) {
		if (st[i].error[0])
			printf("%3s  %-12s  error: %s\n",
			       index_text(st[i].device, index, sizeof(index)),
			       st[i].device->pci[0] ? st[i].device->pci : "?",
			       st[i].error);
		else
			print_device_row(&st[i], clients);
	}
}

/* A line per chip with SparseCores; none when no chip has them. */
static void print_sparsecores(const struct device_status *st, size_t n)
{
	bool header = false;
	char simd[24], spmem[24];
	size_t i;

	for (i = 0; i < n; i++) {
		const struct accel_device_info *info = &st[i].info;

		if (st[i].error[0] || !info->sparsecores)
			continue;
		if (!header)
			printf("\nDEV  SPARSECORES  TILES  SIMD F32/BF16  SPMEM EACH\n");
		header = true;
		snprintf(simd, sizeof(simd), "%u/%u", info->sc_simd_f32,
			 info->sc_simd_bf16);
		format_bytes((uint64_t)info->sc_spmem_kib * 1024, spmem,
			     sizeof(spmem));
		printf("%3d  %11u  %5u  %13s  %10s\n", st[i].device->index,
		       info->sparsecores, info->sc_tiles, simd, spmem);
	}
}

static void print_versions_and_slice(const struct device_status *st, size_t n)
{
	size_t i;

	printf("\nDEV  DRIVER         UAPI   MODEL  CHIP ID     ICI PORTS  LINKS UP  SLICE       CHIP    TOPOLOGY  WRAP  COORDS\n");
	for (i = 0; i < n; i++) {
		const struct accel_device_info *info = &st[i].info;
		char driver[48], model[16], up[24], chip[24], topo[40];
		char wrap[TSR_ICI_MAX_DIMS + 1], coords[40];
		unsigned int wired, n_up;

		if (st[i].error[0])
			continue;
		snprintf(driver, sizeof(driver), "%s %d.%d.%d", info->driver_name,
			 info->driver_major, info->driver_minor, info->driver_patch);
		snprintf(model, sizeof(model), "%u.%u", info->device_version_major,
			 info->device_version_minor);
		count_links(&st[i], &wired, &n_up);
		if (wired)
			snprintf(up, sizeof(up), "%u of %u", n_up, wired);
		else
			snprintf(up, sizeof(up), "%s", links_state(&st[i]));
		snprintf(chip, sizeof(chip), "%u of %u", info->slice_index,
			 info->slice_chips);
		snprintf(topo, sizeof(topo), "%ux%ux%u", info->topology[0],
			 info->topology[1], info->topology[2]);
		format_wrap(info->wrap, wrap, sizeof(wrap));
		snprintf(coords, sizeof(coords), "%u,%u,%u", info->coords[0],
			 info->coords[1], info->coords[2]);
		printf("%3d  %-13s  %2d.%-2d  %5s  0x%08x  %9u  %-8s  %-10u  %-6s  %-8s  %-4s  %s\n",
		       st[i].device->index, driver, info->driver_major,
		       info->driver_minor, model,
		       info->chip_id, info->ici_ports, up, info->slice_id, chip,
		       topo, wrap[0] ? wrap : "-", coords);
	}
}

static void print_port(int index, unsigned int p,
		       const struct accel_link_info *link, const char *transport)
{
	char peer[16] = "-", peer_port[8] = "-", tx[24], rx[24], tail[48];

	if (peer_known(link->port.state)) {
		format_coords(&link->port.peer, peer, sizeof(peer));
		snprintf(peer_port, sizeof(peer_port), "%u %s",
			 link->port.peer_port,
			 link->port.peer_port < TSR_ICI_MAX_PORTS ?
			 port_directions[link->port.peer_port] : "?");
	}
	format_bytes(link->bytes_tx, tx, sizeof(tx));
	format_bytes(link->bytes_rx, rx, sizeof(rx));
	snprintf(tail, sizeof(tail), "%" PRIu64 "/%" PRIu64, link->tail_probes,
		 link->tail_losses);
	printf("%3d  %u %s  %-12s  %-11s  %-9s  %10s  %10s  %6" PRIu64 "  %7" PRIu64 "  %13s  %s\n",
	       index, p, port_directions[p],
	       accel_link_state_name(link->port.state), peer, peer_port, tx, rx,
	       link->crc_errors + link->seq_errors + link->protocol_errors,
	       link->replays, tail, transport);
}

/* One line per port with a socket. */
static void print_links(const struct device_status *st, size_t n)
{
	unsigned int shown = 0, p;
	size_t i;

	printf("\nDEV  PORT  STATE         PEER         PEER PORT    TX BYTES    RX BYTES  ERRORS  REPLAYS  PROBES/LOSSES  TRANSPORT\n");
	for (i = 0; i < n; i++) {
		const struct accel_device_info *info = &st[i].info;

		if (st[i].error[0])
			continue;
		for (p = 0; p < info->ici_ports && p < TSR_ICI_MAX_PORTS; p++) {
			if (!port_wired(info, p))
				continue;
			print_port(st[i].device->index, p, &st[i].links[p],
				   st[i].transport[p]);
			shown++;
		}
	}
	if (!shown)
		printf("  -  no ICI port is wired\n");
}

static void print_counters(const struct device_status *st, size_t n)
{
	size_t i;

	printf("\nDEV  JOBS DONE  FAILED  MMU FAULTS  TIMEOUTS  LOST IRQS  RESETS Q/CHIP  FATAL  BANNED  ECC CE/UE  LINK DOWN/UP  REFUSED\n");
	for (i = 0; i < n; i++) {
		const uint64_t *c = st[i].driver;
		char resets[48], ecc[48], links[48];

		if (st[i].error[0])
			continue;
		snprintf(resets, sizeof(resets), "%" PRIu64 "/%" PRIu64,
			 c[DRV_QUEUE_RESETS], c[DRV_DEVICE_RESETS]);
		snprintf(ecc, sizeof(ecc), "%" PRIu64 "/%" PRIu64,
			 c[DRV_ECC_CORRECTABLE], c[DRV_ECC_UNCORRECTABLE]);
		snprintf(links, sizeof(links), "%" PRIu64 "/%" PRIu64,
			 c[DRV_LINK_DOWNS], c[DRV_LINK_UPS]);
		printf("%3d  %9" PRIu64 "  %6" PRIu64 "  %10" PRIu64 "  %8" PRIu64
		       "  %9" PRIu64 "  %13s  %5" PRIu64 "  %6" PRIu64 "  %9s"
		       "  %12s  %7" PRIu64 "\n",
		       st[i].device->index, c[DRV_JOBS_COMPLETED],
		       c[DRV_JOBS_FAILED], c[DRV_MMU_FAULTS], c[DRV_TIMEOUTS],
		       c[DRV_LOST_IRQS], resets, c[DRV_FATAL_ERRORS],
		       c[DRV_BANNED_CONTEXTS], ecc, links,
		       c[DRV_REMOTE_ACCESS_REFUSED]);
	}
}

static void print_client(int index, const struct client *c)
{
	char hbm[24], host[24];

	format_bytes(c->memory[REGION_HBM][STAT_TOTAL], hbm, sizeof(hbm));
	format_bytes(c->memory[REGION_HOST][STAT_TOTAL], host, sizeof(host));
	printf("%3d  %7d  %-16s  %6" PRIu64 "  %10s  %10s  %11.3f s\n", index,
	       (int)c->pid, c->comm, c->client_id, hbm, host,
	       (double)engine_total_ns(c) / NSEC_PER_SEC);
}

static void print_processes(const struct device_status *st, size_t n,
			    const struct client_list *clients)
{
	unsigned int shown = 0;
	size_t i, j;

	printf("\nDEV  PID      NAME              CLIENT         HBM        HOST  ENGINE TIME\n");
	for (i = 0; i < n; i++)
		for (j = 0; j < clients->count; j++)
			if (st[i].device->pci[0] &&
			    !strcmp(clients->items[j].pdev, st[i].device->pci)) {
				print_client(st[i].device->index, &clients->items[j]);
				shown++;
			}
	if (!shown)
		printf("  -  no process is using %s\n", n == 1 ? "it" : "them");
}

void print_tables(const char *timestamp, const struct device_status *st,
			 size_t n, const struct client_list *clients)
{
	double window = -1;
	size_t i;

	for (i = 0; i < n; i++)
		if (st[i].have_util)
			window = st[i].util.window_s;
	printf(PROGRAM " %d.%d.%d   libaccel %s   %s", ACCEL_VERSION_MAJOR,
	       ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH, accel_version_string(),
	       timestamp);
	if (window >= 0)
		printf("   utilization over %.2f s\n\n", window);
	else
		printf("   utilization not sampled\n\n");
	print_devices(st, n, clients);
	print_sparsecores(st, n);
	print_versions_and_slice(st, n);
	print_links(st, n);
	print_counters(st, n);
	print_processes(st, n, clients);
}

/* ------------------------------------------------------------ dmon */

/*
 * --dmon: a line per chip per interval, every figure but HBM and the
 * links up being what the interval added.  Fixed units, so that columns
 * line up and scripts can read them.
 */
#define DMON_FORMAT "%5s %5s %5s %5s %9s %6s %6s %10s %10s %5s %5s %5s\n"

void print_dmon_header(void)
{
	printf(DMON_FORMAT, "# dev", "mxu", "vpu", "dma", "hbm", "jobs", "fail",
	       "ici_tx", "ici_rx", "links", "downs", "ups");
	printf(DMON_FORMAT, "# idx", "%", "%", "%", "MiB", "#", "#", "KiB", "KiB",
	       "up", "#", "#");
}

static void print_dmon_line(const struct device_status *st)
{
	const struct utilization *u = &st->util;
	char links[16] = "-";
	unsigned int wired, up;

	count_links(st, &wired, &up);
	if (wired)
		snprintf(links, sizeof(links), "%u/%u", up, wired);
	printf("%5d %5.1f %5.1f %5.1f %9.1f %6" PRIu64 " %6" PRIu64
	       " %10.1f %10.1f %5s %5" PRIu64 " %5" PRIu64 "\n",
	       st->device->index, u->percent[0], u->percent[1], u->percent[2],
	       (double)(st->info.hbm_size - st->info.hbm_free) / (1 << 20),
	       u->jobs_completed, u->jobs_failed, u->ici_bytes_tx / 1024.0,
	       u->ici_bytes_rx / 1024.0, links, u->link_downs, u->link_ups);
}

void print_dmon(const struct device_status *st, size_t n)
{
	char index[16];
	size_t i;

	for (i = 0; i < n; i++) {
		if (st[i].error[0] || !st[i].have_util)
			printf("%5s error: %s\n",
			       index_text(st[i].device, index, sizeof(index)),
			       st[i].error[0] ? st[i].error :
			       "no sample to start the interval from");
		else
			print_dmon_line(&st[i]);
	}
}
