#!/usr/bin/env node
// madspark's MCP server tested with the official TypeScript SDK, as an MCP
// client uses it: `madspark mcp` spawned over stdio, and `madspark serve`'s
// /mcp over Streamable HTTP with its token.
//
//   node mcp.mjs --command PATH [--arg ARG ...] --url http://127.0.0.1:8080 --token TOKEN --calls URL
//
// --command (with its --arg's) starts `madspark mcp`, with this process's
// environment; --url is a running `madspark serve` that requires --token;
// --calls answers {"total": n, "by_schema": {...}}: the requests the
// in-process model provider behind both has answered, which the steps
// count. For each transport it lists the tools, runs spark with progress,
// makes a bad call, cancels a slow chaos run, and reads the run as a
// resource; over HTTP it also checks that the token is required, that a
// foreign Origin is refused (its POST and its GET of the stream), that
// ending a session stops its running call and that a body over 1 MiB is
// refused. The cmd/madspark Go test TestMCPEndToEnd runs
// this script; its last line is "mcp e2e: N passed, M failed".

import { parseArgs } from 'node:util'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'

const { values: opts } = parseArgs({
  options: {
    command: { type: 'string' },
    arg: { type: 'string', multiple: true, default: [] },
    url: { type: 'string' },
    token: { type: 'string' },
    calls: { type: 'string' },
  },
})
if (!opts.command || !opts.url || !opts.token || !opts.calls) {
  console.error('mcp e2e: --command, --url, --token and --calls are required')
  process.exit(2)
}
const base = opts.url.replace(/\/$/, '')

let passed = 0
let failed = 0
async function step(name, fn) {
  try {
    await fn()
    passed++
    console.log(`ok   ${name}`)
  } catch (err) {
    failed++
    console.log(`FAIL ${name}: ${err?.stack || err}`)
  }
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg)
}

// calls returns what the model provider has answered so far.
async function calls() {
  const res = await fetch(opts.calls)
  return res.json()
}

async function waitFor(what, cond, ms = 30000) {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await cond()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

const pipelines = ['assess', 'chaos', 'chaos-file', 'debate', 'eval', 'pitch', 'proposal', 'spark']

async function exercise(label, connect) {
  const client = new Client({ name: 'madspark-e2e', version: '1.0.0' })
  await connect(client)
  let sparkRun

  await step(`${label}: lists the pipelines as tools`, async () => {
    const { tools } = await client.listTools()
    const names = tools.map((t) => t.name).sort()
    assert(JSON.stringify(names) === JSON.stringify(pipelines), `tools ${names}`)
    const spark = tools.find((t) => t.name === 'spark')
    assert(spark.inputSchema.type === 'object' && spark.inputSchema.required?.includes('topic'), 'spark requires no topic')
    assert(spark.inputSchema.properties.num_candidates.description, 'num_candidates has no description')
    assert(spark.outputSchema.required.includes('run_id') && spark.outputSchema.properties.candidates, 'spark has no output schema')
    assert(tools.every((t) => t.description && t.outputSchema), 'a tool without a description or output schema')
  })

  await step(`${label}: runs spark with progress`, async () => {
    const before = await calls()
    const progress = []
    // The SDK checks the structured content against the output schema.
    const res = await client.callTool({ name: 'spark', arguments: { topic: 'urban farming', num_candidates: 4 } }, undefined, {
      onprogress: (p) => progress.push(p),
      resetTimeoutOnProgress: true,
    })
    assert(!res.isError, `error: ${JSON.stringify(res.content)}`)
    sparkRun = res.structuredContent.run_id
    assert(/^[0-9a-f-]{36}$/.test(sparkRun), `run_id ${sparkRun}`)
    assert(res.structuredContent.candidates.length === 3, 'not 3 candidates')
    const text = res.content[0].text
    assert(res.content[0].type === 'text' && text.startsWith('# ') && text.includes(`run ${sparkRun}`), `report: ${text.slice(0, 200)}`)
    const msgs = progress.map((p) => p.message)
    // Not 'done': the SDK hands a notification to its handler a microtask
    // later, and drops it when the call's answer, read in the same chunk,
    // has already ended the call; the Go tests check that 'done' is sent.
    for (const want of ['evaluate: evaluating 4 ideas', 'improve: improving 3 ideas']) {
      assert(msgs.includes(want), `no progress "${want}" in ${JSON.stringify(msgs)}`)
    }
    for (let i = 1; i < progress.length; i++) {
      assert(progress[i].progress > progress[i - 1].progress, `progress went from ${progress[i - 1].progress} to ${progress[i].progress}`)
    }
    const after = await calls()
    assert(after.total - before.total === 6, `the provider answered ${after.total - before.total} requests, want 6`)
  })

  await step(`${label}: a bad call is the tool's error, before any model call`, async () => {
    const before = await calls()
    const res = await client.callTool({ name: 'spark', arguments: { topic: 'tea', num_candidates: 99 } })
    assert(res.isError === true, 'not an error')
    assert(res.content[0].text === 'num_candidates must be 1..20, got 99', `message: ${res.content[0].text}`)
    const after = await calls()
    assert(after.total === before.total, 'the provider was called')
  })

  await step(`${label}: cancels a slow chaos run`, async () => {
    const before = await calls()
    const judged = () => before.by_schema?.chaos_judgement ?? 0
    const abort = new AbortController()
    let runID
    let judging = false
    const call = client.callTool({ name: 'chaos', arguments: { prompt: 'a board game about rivers', iterations: 1 } }, undefined, {
      signal: abort.signal,
      onprogress: (p) => {
        runID ??= p.message.match(/^run (\S+) of chaos started$/)?.[1]
        judging ||= p.message.includes('judge')
      },
    })
    call.catch(() => {})
    // The judge's request is held by the provider: cancel once it is there.
    await waitFor('the judge to be asked', async () => judging && (await calls()).by_schema?.chaos_judgement === judged() + 1)
    abort.abort('enough')
    let rejected = false
    try {
      await call
    } catch {
      rejected = true
    }
    assert(rejected, 'the cancelled call did not reject')
    assert(runID, 'no progress named the run')
    const run = await waitFor('the run to be cancelled', async () => {
      const r = JSON.parse((await client.readResource({ uri: `madspark://runs/${runID}` })).contents[0].text)
      return r.status === 'running' ? null : r
    })
    assert(run.status === 'cancelled' && run.resumable === true, `run ${runID}: ${run.status}, resumable ${run.resumable}`)
  })

  await step(`${label}: reads the run as a resource`, async () => {
    assert(sparkRun, 'no spark run')
    const uri = `madspark://runs/${sparkRun}`
    const { resources } = await client.listResources()
    assert(resources.some((r) => r.uri === uri), `${uri} is not listed`)
    assert(resources.some((r) => r.uri === `${uri}/export.pdf` && r.mimeType === 'application/pdf'), 'the PDF export is not listed')
    const { resourceTemplates } = await client.listResourceTemplates()
    assert(resourceTemplates.some((t) => t.uriTemplate === 'madspark://runs/{id}'), 'no template of runs')
    const c = (await client.readResource({ uri })).contents[0]
    const run = JSON.parse(c.text)
    assert(c.mimeType === 'application/json' && run.run_id === sparkRun && run.status === 'succeeded', `run: ${c.text.slice(0, 200)}`)
    assert(run.usage.llm_calls === 6 && Array.isArray(run.repairs) && run.result.candidates.length === 3, 'usage, repairs or result')
    const md = (await client.readResource({ uri: `${uri}/export.md` })).contents[0]
    assert(md.mimeType === 'text/markdown' && md.text.includes('urban farming'), 'Markdown export')
    const pdf = (await client.readResource({ uri: `${uri}/export.pdf` })).contents[0]
    assert(Buffer.from(pdf.blob, 'base64').subarray(0, 5).toString() === '%PDF-', 'PDF export')
  })

  await client.close()
}

await exercise('stdio', (client) =>
  client.connect(new StdioClientTransport({ command: opts.command, args: opts.arg, env: process.env, stderr: 'inherit' })),
)

const auth = { Authorization: `Bearer ${opts.token}` }
await exercise('http', (client) =>
  client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: auth } })),
)

const initialize = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'page', version: '1' } },
})
const post = (headers) =>
  fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: initialize,
  })

await step('http: the token is required', async () => {
  const res = await post({})
  assert(res.status === 401, `status ${res.status}`)
})

await step('http: a page of another origin is refused', async () => {
  const before = await calls()
  const res = await post({ ...auth, Origin: 'https://evil.example', 'Sec-Fetch-Site': 'cross-site' })
  assert(res.status === 403, `status ${res.status}`)
  const body = await res.json()
  assert(/cross-origin POST refused/.test(body.error?.message), `body ${JSON.stringify(body)}`)
  const ok = await post({ ...auth, Origin: base })
  assert(ok.status === 200, `the server's own origin: status ${ok.status}`)
  assert((await calls()).total === before.total, 'the provider was called')
})

const httpClient = async () => {
  const client = new Client({ name: 'madspark-e2e', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: auth } })
  await client.connect(transport)
  return { client, transport }
}

await step('http: ending the session stops its running call', async () => {
  const { client, transport } = await httpClient()
  const before = await calls()
  const judged = before.by_schema?.chaos_judgement ?? 0
  let runID
  let judging = false
  const call = client.callTool({ name: 'chaos', arguments: { prompt: 'a board game about tides', iterations: 1 } }, undefined, {
    onprogress: (p) => {
      runID ??= p.message.match(/^run (\S+) of chaos started$/)?.[1]
      judging ||= p.message.includes('judge')
    },
  })
  call.catch(() => {})
  await waitFor('the judge to be asked', async () => judging && (await calls()).by_schema?.chaos_judgement === judged + 1)
  const start = Date.now()
  await transport.terminateSession()
  assert(Date.now() - start < 10000, `the session's end took ${Date.now() - start} ms`)
  assert(runID, 'no progress named the run')
  const { client: reader } = await httpClient()
  const run = await waitFor('the run to stop', async () => {
    const r = JSON.parse((await reader.readResource({ uri: `madspark://runs/${runID}` })).contents[0].text)
    return r.status === 'running' ? null : r
  })
  assert(run.status === 'cancelled' && run.resumable === true, `run ${runID}: ${run.status}, resumable ${run.resumable}`)
  await reader.close()
  await client.close().catch(() => {})
})

await step("http: a page of another origin cannot follow /mcp's stream", async () => {
  const res = await fetch(`${base}/mcp`, {
    headers: { ...auth, Accept: 'text/event-stream', Origin: 'https://evil.example', 'Sec-Fetch-Site': 'cross-site' },
  })
  assert(res.status === 403, `status ${res.status}`)
})

await step('http: a body over 1 MiB is refused', async () => {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: initialize.replace('"page"', JSON.stringify('x'.repeat(1 << 20))),
  })
  assert(res.status === 413, `status ${res.status}`)
})

console.log(`mcp e2e: ${passed} passed, ${failed} failed`)
process.exit(failed > 0 ? 1 : 0)
