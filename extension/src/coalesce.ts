// Restart coalescing. Pure (timers are injected) so node:test can run it with a fake clock.

export interface Timers {
    setTimeout(fn: () => void, ms: number): unknown;
    clearTimeout(handle: unknown): void;
}

const realTimers: Timers = {
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    clearTimeout: (handle) => {
        clearTimeout(handle as ReturnType<typeof setTimeout>);
    },
};

/**
 * Runs `task` once for any burst of requests: requests within `delayMs` of each other collapse into
 * one run, and requests made while a run is in progress cause exactly one more run after it. Changing
 * the interpreter fires several configuration events in a row; without this each would kill and spawn
 * a Python process.
 */
export class Coalescer {
    private timer: unknown;
    private running: Promise<void> | undefined;
    private pending = false;
    private waiters: (() => void)[] = [];
    private disposed = false;

    constructor(
        private readonly task: () => Promise<void>,
        private readonly delayMs: number,
        private readonly timers: Timers = realTimers,
        private readonly onError: (error: unknown) => void = () => undefined,
    ) {}

    /** Asks for a run; resolves when a run that started after this request has finished. */
    request(): Promise<void> {
        if (this.disposed) {
            return Promise.resolve();
        }
        const done = new Promise<void>((resolve) => this.waiters.push(resolve));
        if (this.running !== undefined) {
            this.pending = true;
            return done;
        }
        if (this.timer !== undefined) {
            this.timers.clearTimeout(this.timer);
        }
        this.timer = this.timers.setTimeout(() => {
            this.timer = undefined;
            void this.run();
        }, this.delayMs);
        return done;
    }

    /** Runs now, cancelling a scheduled run (still coalescing with one in progress). */
    now(): Promise<void> {
        if (this.timer !== undefined) {
            this.timers.clearTimeout(this.timer);
            this.timer = undefined;
        }
        const done = new Promise<void>((resolve) => this.waiters.push(resolve));
        if (this.running !== undefined) {
            this.pending = true;
        } else {
            void this.run();
        }
        return done;
    }

    private async run(): Promise<void> {
        const waiters = this.waiters;
        this.waiters = [];
        this.running = (async () => {
            try {
                await this.task();
            } catch (error) {
                this.onError(error);
            }
        })();
        await this.running;
        this.running = undefined;
        for (const resolve of waiters) {
            resolve();
        }
        if (this.pending && !this.disposed) {
            this.pending = false;
            await this.run();
        }
    }

    dispose(): void {
        this.disposed = true;
        if (this.timer !== undefined) {
            this.timers.clearTimeout(this.timer);
            this.timer = undefined;
        }
        for (const resolve of this.waiters) {
            resolve();
        }
        this.waiters = [];
    }
}
