// C++ harness for Device("verilator"): the Verilated AxiTop (vdla.hardware.top) with an
// AXI4 memory model serving a host buffer (the Device's numpy DRAM, no copy) and an AXI4-Lite
// host that drives the control registers. Loaded by vdla/runtime/verilator.py through ctypes.
//
// Compiled per Config with -DBUS_BYTES=<bus bytes> (and -DVDLA_TRACE=1 for VCD, 2 for FST waveforms)
// against the Verilator-generated model (--prefix Vtop).
//
// Memory timing: read data starts `latency` cycles after its AR handshake and then streams one
// beat per cycle, bursts in order; a write burst is answered on B `b_latency` cycles after
// its last W beat. AR/AW/W are always ready. An access outside the buffer answers SLVERR
// and ends the run with VDLA_FAULT.

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>

#include "Vtop.h"
#include "verilated.h"
#if VDLA_TRACE == 2
#include "verilated_fst_c.h"
typedef VerilatedFstC Trace;
#elif VDLA_TRACE
#include "verilated_vcd_c.h"
typedef VerilatedVcdC Trace;
#endif

#ifndef BUS_BYTES
#error "BUS_BYTES must be defined"
#endif

namespace {

enum { VDLA_DONE = 0, VDLA_STUCK = 1, VDLA_LIMIT = 2, VDLA_FAULT = 3, VDLA_STOPPED = 4, VDLA_BUSY = 5 };

struct Burst {
    uint64_t addr;
    uint32_t left;
    uint32_t id;
    uint64_t ready;  // cycle from which its data may be sent
};

struct WBeat {
    uint8_t data[BUS_BYTES];
    uint64_t strb;
    bool last;
};

struct Harness {
    VerilatedContext* ctx = nullptr;
    Vtop* top = nullptr;
#if VDLA_TRACE
    Trace* tfp = nullptr;
#endif
    uint64_t time = 0;
    uint64_t cycle = 0;
    // Set while vdla_run clocks the model (in Python's worker thread): every other entry point
    // refuses to touch the model meanwhile (VDLA_BUSY) instead of racing it.
    std::atomic<bool> running{false};
    uint8_t* dram = nullptr;
    uint64_t size = 0;
    uint32_t latency = 32;
    uint32_t b_latency = 2;
    std::deque<Burst> rq, wq;
    std::deque<WBeat> wbeats;
    std::deque<std::pair<uint64_t, uint32_t>> bq;  // (ready cycle, id)
    uint64_t beats[4] = {0, 0, 0, 0};  // R beats per ARID (fetch, load, compute), W beats
    uint64_t handshakes = 0;
    bool fault = false;
    uint64_t fault_addr = 0;
    int fault_write = 0;
    // AXI4-Lite host
    bool l_aw = false, l_w = false, l_ar = false, l_b_seen = false, l_r_seen = false;
    uint32_t l_awaddr = 0, l_wdata = 0, l_araddr = 0, l_rdata = 0;
};

template <typename T>
inline void put_word(T& port, const uint8_t* src) {
    T v = 0;
    std::memcpy(&v, src, BUS_BYTES);
    port = v;
}
template <std::size_t N>
inline void put_word(VlWide<N>& port, const uint8_t* src) {
    std::memcpy(port.data(), src, BUS_BYTES);
}
template <typename T>
inline void get_word(const T& port, uint8_t* dst) {
    T v = port;
    std::memcpy(dst, &v, BUS_BYTES);
}
template <std::size_t N>
inline void get_word(const VlWide<N>& port, uint8_t* dst) {
    std::memcpy(dst, port.data(), BUS_BYTES);
}
template <typename T>
inline uint64_t get_strb(const T& port) {
    return (uint64_t)port;
}

void dump(Harness* h) {
#if VDLA_TRACE
    if (h->tfp) h->tfp->dump(h->time);
#endif
    h->time += 5;
}

// Drive every input from the model's state and settle the combinational logic (clk low).
void drive(Harness* h) {
    Vtop* t = h->top;
    t->m_axi_arready = 1;
    t->m_axi_awready = 1;
    t->m_axi_wready = 1;
    bool rvalid = !h->rq.empty() && h->rq.front().ready <= h->cycle;
    t->m_axi_rvalid = rvalid;
    if (rvalid) {
        const Burst& b = h->rq.front();
        uint8_t word[BUS_BYTES];
        if (b.addr + BUS_BYTES <= h->size) {
            std::memcpy(word, h->dram + b.addr, BUS_BYTES);
            t->m_axi_rresp = 0;
        } else {
            std::memset(word, 0, BUS_BYTES);
            t->m_axi_rresp = 2;  // SLVERR
            if (!h->fault) {
                h->fault = true;
                h->fault_addr = b.addr;
                h->fault_write = 0;
            }
        }
        put_word(t->m_axi_rdata, word);
        t->m_axi_rid = b.id;
        t->m_axi_rlast = b.left == 1;
    }
    bool bvalid = !h->bq.empty() && h->bq.front().first <= h->cycle;
    t->m_axi_bvalid = bvalid;
    t->m_axi_bid = bvalid ? h->bq.front().second : 0;
    t->m_axi_bresp = 0;
    t->s_axil_awvalid = h->l_aw;
    t->s_axil_awaddr = h->l_awaddr;
    t->s_axil_wvalid = h->l_w;
    t->s_axil_wdata = h->l_wdata;
    t->s_axil_wstrb = 0xF;
    t->s_axil_bready = 1;
    t->s_axil_arvalid = h->l_ar;
    t->s_axil_araddr = h->l_araddr;
    t->s_axil_rready = 1;
    t->clk = 0;
    t->eval();
}

void apply_writes(Harness* h) {
    while (!h->wq.empty() && !h->wbeats.empty()) {
        Burst& b = h->wq.front();
        WBeat& w = h->wbeats.front();
        if (b.addr + BUS_BYTES <= h->size) {
            for (int k = 0; k < BUS_BYTES; ++k)
                if (w.strb >> k & 1) h->dram[b.addr + k] = w.data[k];
        } else if (!h->fault) {
            h->fault = true;
            h->fault_addr = b.addr;
            h->fault_write = 1;
        }
        h->beats[3]++;
        b.addr += BUS_BYTES;
        b.left--;
        h->wbeats.pop_front();
        if (b.left == 0) {
            h->bq.emplace_back(h->cycle + h->b_latency, b.id);
            h->wq.pop_front();
        }
    }
}

// One clock cycle: sample the handshakes of this cycle, rising edge, update the model, drive.
void tick(Harness* h) {
    Vtop* t = h->top;
    bool ar = t->m_axi_arvalid && t->m_axi_arready;
    bool r = t->m_axi_rvalid && t->m_axi_rready;
    bool aw = t->m_axi_awvalid && t->m_axi_awready;
    bool w = t->m_axi_wvalid && t->m_axi_wready;
    bool b = t->m_axi_bvalid && t->m_axi_bready;
    Burst arb{}, awb{};
    if (ar) arb = Burst{(uint64_t)t->m_axi_araddr, (uint32_t)t->m_axi_arlen + 1u, (uint32_t)t->m_axi_arid, 0};
    if (aw) awb = Burst{(uint64_t)t->m_axi_awaddr, (uint32_t)t->m_axi_awlen + 1u, (uint32_t)t->m_axi_awid, 0};
    WBeat wb{};
    if (w) {
        get_word(t->m_axi_wdata, wb.data);
        wb.strb = get_strb(t->m_axi_wstrb);
        wb.last = t->m_axi_wlast;
    }
    bool l_aw_hs = h->l_aw && t->s_axil_awready;
    bool l_w_hs = h->l_w && t->s_axil_wready;
    bool l_b_hs = t->s_axil_bvalid;
    bool l_r_hs = t->s_axil_rvalid;
    uint32_t l_rdata = t->s_axil_rdata;
    bool l_ar_hs = h->l_ar && t->s_axil_arready;

    t->clk = 1;
    t->eval();
    dump(h);
    h->cycle++;

    if (ar) {
        arb.ready = h->cycle + h->latency;
        h->rq.push_back(arb);
    }
    if (r) {
        Burst& head = h->rq.front();
        if (head.id < 3) h->beats[head.id]++;
        head.addr += BUS_BYTES;
        if (--head.left == 0) h->rq.pop_front();
    }
    if (aw) h->wq.push_back(awb);
    if (w) h->wbeats.push_back(wb);
    apply_writes(h);
    if (b) h->bq.pop_front();
    if (ar || r || aw || w || b) h->handshakes++;
    if (l_aw_hs) h->l_aw = false;
    if (l_w_hs) h->l_w = false;
    if (l_ar_hs) h->l_ar = false;
    if (l_b_hs) h->l_b_seen = true;
    if (l_r_hs) {
        h->l_r_seen = true;
        h->l_rdata = l_rdata;
    }
    drive(h);
    dump(h);
}

// Ticks until `seen` (a response flag tick() sets) is up: 0, or -1 if the slave never answers.
static int await_response(Harness* h, const bool& seen) {
    for (int i = 0; i < 1000; ++i) {
        tick(h);
        if (seen) return 0;
    }
    return -1;
}

// AXI4-Lite write (waits for the B response); returns 0, or -1 if the slave never answers.
int reg_write(Harness* h, uint32_t addr, uint32_t value) {
    h->l_aw = h->l_w = true;
    h->l_awaddr = addr;
    h->l_wdata = value;
    h->l_b_seen = false;
    drive(h);
    return await_response(h, h->l_b_seen);
}

// AXI4-Lite read; returns 0 and the value in *value, or -1 if the slave never answers.
int reg_read(Harness* h, uint32_t addr, uint32_t* value) {
    h->l_ar = true;
    h->l_araddr = addr;
    h->l_r_seen = false;
    drive(h);
    if (await_response(h, h->l_r_seen)) return -1;
    *value = h->l_rdata;
    return 0;
}

// Clears the running flag when vdla_run returns, whichever way.
struct Running {
    Harness* h;
    ~Running() { h->running.store(false); }
};

}  // namespace

extern "C" {

void* vdla_new(const char* trace_path, uint32_t latency) {
    Harness* h = new Harness;
    h->ctx = new VerilatedContext;
    h->ctx->commandArgs(0, (const char**)nullptr);
    h->top = new Vtop{h->ctx};
    h->latency = latency;
#if VDLA_TRACE
    if (trace_path && trace_path[0]) {
        h->ctx->traceEverOn(true);
        h->tfp = new Trace;
        h->top->trace(h->tfp, 99);
        h->tfp->open(trace_path);
    }
#else
    (void)trace_path;
#endif
    return h;
}

int vdla_free(void* p) {
    Harness* h = (Harness*)p;
    if (h->running.load()) return VDLA_BUSY;
    // Verilator's scope destructors use the thread's current context, which may be another
    // (possibly deleted) model's: make this model's context current first.
    Verilated::threadContextp(h->ctx);
#if VDLA_TRACE
    if (h->tfp) {
        h->tfp->close();
        delete h->tfp;
    }
#endif
    h->top->final();
    delete h->top;
    delete h->ctx;
    delete h;
    return 0;
}

int vdla_has_trace(void) { return VDLA_TRACE; }

int vdla_bus_bytes(void) { return BUS_BYTES; }

// Reset the design (the on-chip buffers keep their contents) and the memory model.
int vdla_reset(void* p, uint32_t cycles) {
    Harness* h = (Harness*)p;
    if (h->running.load()) return VDLA_BUSY;
    Verilated::threadContextp(h->ctx);
    h->fault = false;
    h->rq.clear();
    h->wq.clear();
    h->wbeats.clear();
    h->bq.clear();
    h->l_aw = h->l_w = h->l_ar = false;
    h->top->rst = 1;
    drive(h);
    for (uint32_t i = 0; i < cycles; ++i) tick(h);
    h->top->rst = 0;
    drive(h);
    tick(h);
    return 0;
}

int vdla_set_memory(void* p, uint8_t* dram, uint64_t size) {
    Harness* h = (Harness*)p;
    if (h->running.load()) return VDLA_BUSY;
    h->dram = dram;
    h->size = size;
    return 0;
}

uint64_t vdla_cycle(void* p) { return ((Harness*)p)->cycle; }

void vdla_beats(void* p, uint64_t* out) {
    Harness* h = (Harness*)p;
    for (int i = 0; i < 4; ++i) out[i] = h->beats[i];
}

int vdla_fault(void* p, uint64_t* addr, int* is_write) {
    Harness* h = (Harness*)p;
    *addr = h->fault_addr;
    *is_write = h->fault_write;
    return h->fault;
}

// AXI4-Lite write: 0, -1 if the slave never answers, VDLA_BUSY while a run is going on.
int vdla_reg_write(void* p, uint32_t addr, uint32_t value) {
    Harness* h = (Harness*)p;
    if (h->running.load()) return VDLA_BUSY;
    return reg_write(h, addr, value);
}

// AXI4-Lite read (the value in *value): 0, -1 if the slave never answers, VDLA_BUSY while running.
int vdla_reg_read(void* p, uint32_t addr, uint32_t* value) {
    Harness* h = (Harness*)p;
    if (h->running.load()) return VDLA_BUSY;
    return reg_read(h, addr, value);
}

// Start a run through the control registers and clock until irq (done), the watchdog,
// `max_cycles` (0: none) or a memory fault. `marks`/`n_marks`: register offsets of the
// progress counters the watchdog watches when the memory bus is quiet. `stop` (may be null):
// polled every 1024 cycles; non-zero ends the run with VDLA_STOPPED (Python sets it from
// another thread on Ctrl-C or at its wall-clock limit).
int vdla_run(void* p, uint32_t insn_addr, uint32_t insn_count, uint64_t max_cycles, uint64_t watchdog,
             const uint32_t* marks, int n_marks, uint32_t reg_insn_addr, uint32_t reg_insn_count,
             uint32_t reg_control, volatile int32_t* stop) {
    Harness* h = (Harness*)p;
    if (h->running.exchange(true)) return VDLA_BUSY;  // another run of this model has not returned
    Running guard{h};
    Verilated::threadContextp(h->ctx);
    h->fault = false;
    if (reg_write(h, reg_insn_addr, insn_addr) || reg_write(h, reg_insn_count, insn_count) ||
        reg_write(h, reg_control, 1))
        return VDLA_STUCK;
    uint64_t start = h->cycle;
    uint64_t last_progress = h->cycle, stamp = h->cycle, seen = h->handshakes;
    uint32_t mark[32] = {0};
    if (n_marks > 32) n_marks = 32;
    while (!h->top->irq) {
        tick(h);
        if (h->fault) return VDLA_FAULT;
        if (h->handshakes != seen) {
            seen = h->handshakes;
            last_progress = h->cycle;
        } else if (h->cycle - stamp >= 256) {
            stamp = h->cycle;
            bool changed = false;
            for (int i = 0; i < n_marks; ++i) {
                uint32_t v = 0;
                if (reg_read(h, marks[i], &v)) return VDLA_STUCK;
                if (v != mark[i]) changed = true;
                mark[i] = v;
            }
            seen = h->handshakes;  // the reads above do not count as progress
            if (changed) last_progress = h->cycle;
            else if (h->cycle - last_progress >= watchdog) return VDLA_STUCK;
        }
        if (max_cycles && h->cycle - start >= max_cycles) return VDLA_LIMIT;
        if (stop && (h->cycle & 1023) == 0 && __atomic_load_n(stop, __ATOMIC_RELAXED)) return VDLA_STOPPED;
    }
    return h->fault ? VDLA_FAULT : VDLA_DONE;
}

}  // extern "C"
