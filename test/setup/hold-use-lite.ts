import { createUseLiteEmbedder } from '../../src/embed/use-lite-embedder.js';
import type { Embedder } from '../../src/embed/embedder.js';

/**
 * Integration files run one after another in each vitest worker process, sharing its modules
 * (isolate: false), and most of them open a gateway or a resolver runtime, whose embedder loads
 * the USE-lite model: ~2 s of CPU each time under the test load. The embedders of a process share
 * one model worker that ends with its last user (src/embed/use-lite-worker-lease.ts); holding one
 * embedder here, for the life of the test process, makes each process load the model once. Its
 * worker is referenced only while it embeds, so it never keeps the process from exiting.
 */
const holder = globalThis as { kiwiUseLiteHold?: Promise<Embedder> };
holder.kiwiUseLiteHold ??= createUseLiteEmbedder();
await holder.kiwiUseLiteHold;
