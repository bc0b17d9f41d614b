// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// flowcop::events: flow created/destroyed events as JSON lines, without ever stalling the data plane.
//
// Each lcore emit()s fixed-size Events into its own single-producer rte_ring (no syscall, no lock,
// no allocation, no read-modify-write atomic); one writer thread drains the rings about every
// millisecond, formats JSON lines into one large batch and writes it with write(2). When the writer
// cannot keep up the rings fill and events are dropped and counted; when the output fails, the lost
// events are counted too. No EAL is needed: rings live in memory this library allocates.
// See event.h (the line format), producer.h (the lcore side) and writer.h (the thread and the file).
#include <events/event.h>
#include <events/producer.h>
#include <events/writer.h>
