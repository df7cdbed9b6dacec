import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Coalescer, type Timers } from '../src/coalesce';

/** A manual clock: timers fire only when the test advances time. */
class FakeTimers implements Timers {
    now = 0;
    private next = 1;
    private readonly pending = new Map<number, { at: number; fn: () => void }>();

    setTimeout(fn: () => void, ms: number): unknown {
        const id = this.next++;
        this.pending.set(id, { at: this.now + ms, fn });
        return id;
    }

    clearTimeout(handle: unknown): void {
        this.pending.delete(handle as number);
    }

    get scheduled(): number {
        return this.pending.size;
    }

    async advance(ms: number): Promise<void> {
        this.now += ms;
        for (const [id, t] of [...this.pending].sort((a, b) => a[1].at - b[1].at)) {
            if (t.at <= this.now) {
                this.pending.delete(id);
                t.fn();
            }
        }
        await settle();
    }
}

/** Lets pending promise callbacks run. */
async function settle(): Promise<void> {
    for (let i = 0; i < 20; i++) {
        await Promise.resolve();
    }
}

/** A task that counts runs and can be held open to simulate a slow restart. */
function task(): { run: () => Promise<void>; runs: () => number; release: () => void; hold: () => void } {
    let runs = 0;
    let gate: Promise<void> | undefined;
    let open: (() => void) | undefined;
    return {
        run: async () => {
            runs += 1;
            if (gate !== undefined) {
                await gate;
            }
        },
        runs: () => runs,
        hold: () => {
            gate = new Promise((resolve) => (open = resolve));
        },
        release: () => {
            gate = undefined;
            open?.();
        },
    };
}

describe('Coalescer', () => {
    it('runs once for a burst of requests', async () => {
        const timers = new FakeTimers();
        const t = task();
        const c = new Coalescer(t.run, 300, timers);
        const done = [c.request(), c.request(), c.request()];
        await timers.advance(100);
        void c.request();
        await timers.advance(299);
        assert.equal(t.runs(), 0, 'each request restarts the delay');
        await timers.advance(1);
        await Promise.all(done);
        assert.equal(t.runs(), 1);
        assert.equal(timers.scheduled, 0);
    });

    it('runs exactly once more for requests made during a run', async () => {
        const timers = new FakeTimers();
        const t = task();
        const c = new Coalescer(t.run, 300, timers);
        t.hold();
        void c.request();
        await timers.advance(300);
        assert.equal(t.runs(), 1);
        const late = [c.request(), c.request(), c.now()];
        await settle();
        assert.equal(t.runs(), 1, 'no second run while the first is in progress');
        t.release();
        await Promise.all(late);
        assert.equal(t.runs(), 2);
        await timers.advance(1000);
        assert.equal(t.runs(), 2, 'nothing left over');
    });

    it('now() runs at once and cancels a scheduled run', async () => {
        const timers = new FakeTimers();
        const t = task();
        const c = new Coalescer(t.run, 300, timers);
        void c.request();
        await c.now();
        assert.equal(t.runs(), 1);
        await timers.advance(300);
        assert.equal(t.runs(), 1);
    });

    it('reports a failing run and keeps working', async () => {
        const timers = new FakeTimers();
        const errors: unknown[] = [];
        let runs = 0;
        const c = new Coalescer(
            () => {
                runs += 1;
                return runs === 1 ? Promise.reject(new Error('boom')) : Promise.resolve();
            },
            10,
            timers,
            (e) => errors.push(e),
        );
        await c.now();
        await c.now();
        assert.equal(runs, 2);
        assert.equal(errors.length, 1);
        assert.match(String(errors[0]), /boom/);
    });

    it('does nothing after dispose', async () => {
        const timers = new FakeTimers();
        const t = task();
        const c = new Coalescer(t.run, 300, timers);
        const pending = c.request();
        c.dispose();
        await pending; // resolved by dispose, not left hanging
        await timers.advance(1000);
        await c.request();
        assert.equal(t.runs(), 0);
    });
});
