# SPDX-License-Identifier: GPL-2.0-or-later
# The QEMU devices Tessera VMs use, and nothing else: a q35 PC (which brings
# its serial ports), PCIe root ports for hot-plug, virtio-9p for folders
# shared with the host (tessera-vm --share-dir), and the Tessera chip.
CONFIG_Q35=y
CONFIG_PCIE_PORT=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_9P=y
CONFIG_TESSERA=y
