#!/usr/bin/env node
// madspark's OpenAI-compatible API as real clients use it, against a
// running `madspark serve` whose provider is the echoing fake of
// cmd/madspark TestOpenAIClients:
//
//   node clients.mjs --url http://127.0.0.1:8080 --provider http://127.0.0.1:9090/v1 --mock-url http://127.0.0.1:8081
//
// With the official `openai` client, LangChain's ChatOpenAI and the Vercel
// AI SDK (`ai` with `@ai-sdk/openai`), at the versions package-lock.json
// pins, it checks: chat with a system message and settings, plain and
// streamed, that the provider receives; an answer cut off at max_tokens;
// JSON schema and JSON object answers through each client's structured API
// (response_format and parse, withStructuredOutput, the AI SDK's object and
// JSON outputs), repaired by madspark's reader or refused when unusable;
// the Responses API (responses.create plain and streamed, responses.parse,
// the AI SDK's default model); tool calls through madspark-direct (plain
// and streamed with the openai client, a Responses function_call round
// trip, an Agents SDK agent with a function tool on the Responses and on
// the chat model, the AI SDK's generateText and streamText running a tool
// on both models, LangChain's createAgent with a function tool and with a
// responseFormat); the request bodies promptfoo's OpenAI chat and
// Responses providers send by default (temperature 0, max_tokens 1024) and the
// Agents SDK's instructions on every model; a reasoning effort and a
// verbosity reaching the provider through madspark-direct (chat,
// Responses, an Agents SDK agent's model settings); a chat UI's follow-up
// to a pipeline model, the whole conversation sent again, the earlier
// turns reaching every call of the run; a pipeline model's stages
// streamed as reasoning before its answer; an unknown route; a field a
// pipeline model cannot honour; cached tokens; a capacity refusal (429
// with Retry-After before any byte of the stream, and no run recorded).
// The pipeline models run whole on a second server in mock mode
// (--mock-url). Exit status 0 means every case passed.

import { parseArgs } from 'node:util'
import { deepStrictEqual } from 'node:assert'
import OpenAI from 'openai'
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod'
import { ChatOpenAI } from '@langchain/openai'
import { HumanMessage, SystemMessage } from '@langchain/core/messages'
import { createOpenAI } from '@ai-sdk/openai'
import { generateText, Output, stepCountIs, streamText, tool as aiTool } from 'ai'
import { createAgent, tool as lcTool } from 'langchain'
import { Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, run, setTracingDisabled, tool } from '@openai/agents'
import { z } from 'zod'

const { values: opts } = parseArgs({
  options: {
    url: { type: 'string' },
    provider: { type: 'string' },
    'mock-url': { type: 'string' },
  },
})
if (!opts.url || !opts.provider || !opts['mock-url']) {
  console.error('clients: --url (a running `madspark serve`), --provider (its fake provider) and --mock-url (a server in mock mode) are required')
  process.exit(2)
}
const base = opts.url.replace(/\/$/, '')
const v1 = base + '/v1'
const mockV1 = opts['mock-url'].replace(/\/$/, '') + '/v1'
setTracingDisabled(true)

let passed = 0
let failed = 0

function check(ok, message) {
  if (!ok) throw new Error(message)
}

async function step(name, fn) {
  const t0 = Date.now()
  try {
    await fn()
    passed++
    console.log(`ok   ${name} (${Date.now() - t0} ms)`)
  } catch (err) {
    failed++
    console.log(`FAIL ${name}: ${String(err?.stack ?? err).split('\n').slice(0, 10).join('\n     ')}`)
  }
}

const openai = new OpenAI({ baseURL: v1, apiKey: 'sk-local', maxRetries: 0 })
const Person = z.object({ name: z.string(), age: z.number() })
const models = ['madspark-direct', 'madspark-debate']
// A query the debate routes to its full debate, so that the aggregator
// writes the answer.
const complex = 'Explain step by step how to design a distributed cache architecture'
const queryFor = (model, tag) => (model === 'madspark-debate' ? `${tag} ${complex}` : `${tag} What is Rust?`)
const ownInstructions = { 'madspark-direct': 'precise, helpful assistant', 'madspark-debate': 'aggregator of a structured debate' }

// echoed reads what the provider received, which it answered with.
function echoed(text) {
  try {
    return JSON.parse(text)
  } catch {
    throw new Error(`the answer is not the provider's echo: ${String(text).slice(0, 200)}`)
  }
}

function checkEcho(e, model, want) {
  check(e.system.includes(want.system), `the provider's system prompt lacks the client's: ${e.system}`)
  check(e.system.includes(ownInstructions[model]), `the provider's system prompt lacks madspark's own: ${e.system}`)
  check(e.system.indexOf(ownInstructions[model]) < e.system.indexOf(want.system), `madspark's instructions do not come first: ${e.system}`)
  check(e.temperature === want.temperature, `temperature ${e.temperature}, want ${want.temperature}`)
  check(e.top_p === want.top_p, `top_p ${e.top_p}, want ${want.top_p}`)
  check(e.max_tokens === want.max_tokens, `max_tokens ${e.max_tokens}, want ${want.max_tokens}`)
  if ('stop' in want) deepStrictEqual(e.stop, want.stop)
  if ('seed' in want) check(e.seed === want.seed, `seed ${e.seed}, want ${want.seed}`)
}

const settings = { system: 'You answer like a pirate.', temperature: 1.7, top_p: 0.3, max_tokens: 50, stop: ['END'], seed: 7 }
let unique = 0
const tag = (what) => `${what}-${++unique}`

// --- the official openai client: chat completions -------------------------

for (const model of models) {
  await step(`openai: ${model} chat with a system message and settings`, async () => {
    const c = await openai.chat.completions.create({
      model,
      messages: [
        { role: 'system', content: settings.system },
        { role: 'user', content: queryFor(model, tag('ECHO')) },
      ],
      temperature: settings.temperature, top_p: settings.top_p, max_tokens: settings.max_tokens, stop: settings.stop, seed: settings.seed,
    })
    check(c.choices[0].finish_reason === 'stop', `finish_reason ${c.choices[0].finish_reason}`)
    checkEcho(echoed(c.choices[0].message.content), model, settings)
    check(c.usage.prompt_tokens > 0 && c.usage.prompt_tokens_details.cached_tokens === 0, `usage ${JSON.stringify(c.usage)}`)
  })

  await step(`openai: ${model} streamed chat with a developer message and settings`, async () => {
    const stream = await openai.chat.completions.create({
      model,
      stream: true,
      stream_options: { include_usage: true },
      messages: [
        { role: 'developer', content: settings.system },
        { role: 'user', content: queryFor(model, tag('ECHO')) },
      ],
      temperature: settings.temperature, top_p: settings.top_p, max_completion_tokens: settings.max_tokens, stop: 'END', seed: settings.seed,
    })
    let text = ''
    let finish = null
    let usage = null
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
      usage = chunk.usage ?? usage
    }
    check(finish === 'stop' && usage?.total_tokens > 0, `finish ${finish}, usage ${JSON.stringify(usage)}`)
    checkEcho(echoed(text), model, { ...settings, stop: ['END'] })
  })
}

await step('a reasoning effort and a verbosity on madspark-direct reach the provider: openai chat and Responses, an Agents SDK agent', async () => {
  const c = await openai.chat.completions.create({
    model: 'madspark-direct', reasoning_effort: 'low', verbosity: 'high', messages: [{ role: 'user', content: tag('ECHO What is Rust?') }],
  })
  const e = echoed(c.choices[0].message.content)
  check(e.reasoning_effort === 'low' && e.verbosity === 'high', `chat: the provider got ${JSON.stringify(e)}`)
  const r = await openai.responses.create({
    model: 'madspark-direct', reasoning: { effort: 'minimal', summary: 'auto' }, text: { verbosity: 'low' }, input: tag('ECHO What is Rust?'),
  })
  const er = echoed(r.output_text)
  check(er.reasoning_effort === 'minimal' && er.verbosity === 'low' && r.reasoning.effort === 'minimal', `responses: the provider got ${JSON.stringify(er)}`)
  const agent = new Agent({
    name: 'Thinker', instructions: 'Be brief.', model: new OpenAIResponsesModel(openai, 'madspark-direct'),
    modelSettings: { reasoning: { effort: 'high' }, text: { verbosity: 'medium' } },
  })
  const ea = echoed((await run(agent, tag('ECHO What is Rust?'))).finalOutput)
  check(ea.reasoning_effort === 'high' && ea.verbosity === 'medium', `agent: the provider got ${JSON.stringify(ea)}`)
  // Left out, neither is sent; a value OpenAI does not define is refused naming the field.
  const plain = echoed((await openai.chat.completions.create({ model: 'madspark-direct', messages: [{ role: 'user', content: tag('ECHO What is Rust?') }] })).choices[0].message.content)
  check(plain.reasoning_effort === '' && plain.verbosity === '', `unset: the provider got ${JSON.stringify(plain)}`)
  try {
    await openai.chat.completions.create({ model: 'madspark-direct', reasoning_effort: 'extreme', messages: [{ role: 'user', content: 'What is Rust?' }] })
    throw new Error('reasoning_effort extreme was accepted')
  } catch (err) {
    check(err instanceof OpenAI.BadRequestError && err.param === 'reasoning_effort', `${err}`)
  }
})

await step('openai: an answer cut off at max_tokens finishes with length', async () => {
  const c = await openai.chat.completions.create({ model: 'madspark-direct', max_tokens: 5, messages: [{ role: 'user', content: 'What is Rust?' }] })
  check(c.choices[0].finish_reason === 'length', `finish_reason ${c.choices[0].finish_reason}`)
  check(c.choices[0].message.content.split(' ').length === 5, `content ${c.choices[0].message.content}`)
  const stream = await openai.chat.completions.create({ model: 'madspark-direct', stream: true, max_tokens: 5, messages: [{ role: 'user', content: 'What is Rust?' }] })
  let finish = null
  for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish
  check(finish === 'length', `streamed finish_reason ${finish}`)
})

for (const model of models) {
  await step(`openai: ${model} parse with a strict JSON schema`, async () => {
    const c = await openai.chat.completions.parse({
      model,
      messages: [{ role: 'user', content: queryFor(model, tag('Describe a person')) }],
      response_format: zodResponseFormat(Person, 'person'),
    })
    const p = c.choices[0].message.parsed
    check(typeof p?.name === 'string' && typeof p?.age === 'number', `parsed ${JSON.stringify(p)}`)
  })

  await step(`openai: ${model} streamed JSON schema answer`, async () => {
    const stream = openai.chat.completions.stream({
      model,
      messages: [{ role: 'user', content: queryFor(model, tag('Describe a person')) }],
      response_format: zodResponseFormat(Person, 'person'),
    })
    const final = await stream.finalChatCompletion()
    const p = final.choices[0].message.parsed
    check(typeof p?.name === 'string' && typeof p?.age === 'number', `parsed ${JSON.stringify(p)}`)
  })

  await step(`openai: ${model} JSON object answer, plain and streamed`, async () => {
    const c = await openai.chat.completions.create({
      model,
      messages: [{ role: 'user', content: queryFor(model, tag('Reply in JSON with a name and an age')) }],
      response_format: { type: 'json_object' },
    })
    deepStrictEqual(JSON.parse(c.choices[0].message.content), { name: 'Ada Lovelace', age: 36 })
    const stream = await openai.chat.completions.create({
      model, stream: true,
      messages: [{ role: 'user', content: queryFor(model, tag('Reply in JSON with a name and an age')) }],
      response_format: { type: 'json_object' },
    })
    let text = ''
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? ''
    deepStrictEqual(JSON.parse(text), { name: 'Ada Lovelace', age: 36 })
  })
}

await step('openai: a fenced, imperfect JSON reply is repaired to the schema', async () => {
  const c = await openai.chat.completions.parse({
    model: 'madspark-direct',
    messages: [{ role: 'user', content: 'Describe Ada Lovelace' }],
    response_format: zodResponseFormat(Person, 'flawed_person'),
  })
  deepStrictEqual(c.choices[0].message.parsed, { name: 'Ada Lovelace', age: 36 })
})

await step('openai: a reply that cannot be read as the schema fails clearly', async () => {
  for (const stream of [false, true]) {
    try {
      const r = await openai.chat.completions.create({
        model: 'madspark-direct', stream,
        messages: [{ role: 'user', content: tag('Describe a person') }],
        response_format: zodResponseFormat(Person, 'hopeless'),
      })
      if (stream) for await (const _ of r) { /* drain */ }
      throw new Error('an unusable reply was passed on as success')
    } catch (err) {
      check(err instanceof OpenAI.APIError && err.status === 502, `stream ${stream}: ${err}`)
      check(/could not be used/.test(err.message), `stream ${stream}: the error does not say why: ${err.message}`)
    }
  }
})

await step('openai: a field a pipeline model cannot honour is a 400 naming it', async () => {
  for (const [extra, param] of [[{ response_format: { type: 'json_object' } }, 'response_format'],
    [{ tools: [{ type: 'function', function: { name: 'f' } }] }, 'tools']]) {
    try {
      await openai.chat.completions.create({ model: 'madspark-spark', messages: [{ role: 'user', content: 'urban farming' }], ...extra })
      throw new Error('accepted')
    } catch (err) {
      check(err instanceof OpenAI.BadRequestError && err.param === param, `${param}: ${err}`)
    }
  }
})

await step('openai: a cached answer reports its prompt tokens as cached', async () => {
  const ask = () => openai.chat.completions.create({ model: 'madspark-direct', messages: [{ role: 'user', content: 'Which language is Rust written in?' }] })
  const first = await ask()
  const second = await ask()
  check(first.usage.prompt_tokens_details.cached_tokens === 0, `first ${JSON.stringify(first.usage)}`)
  check(second.usage.prompt_tokens_details.cached_tokens === first.usage.prompt_tokens && second.usage.prompt_tokens > 0,
    `second ${JSON.stringify(second.usage)}`)
  const rs = await openai.responses.create({ model: 'madspark-direct', input: 'Which language is Rust written in?' })
  check(rs.usage.input_tokens_details.cached_tokens === rs.usage.input_tokens, `responses ${JSON.stringify(rs.usage)}`)
})

// --- the official openai client: the Responses API ------------------------

for (const model of models) {
  await step(`openai: ${model} responses.create with instructions and settings`, async () => {
    const r = await openai.responses.create({
      model, instructions: settings.system, input: queryFor(model, tag('ECHO')),
      temperature: settings.temperature, top_p: settings.top_p, max_output_tokens: settings.max_tokens,
    })
    check(r.object === 'response' && r.status === 'completed' && r.id.startsWith('resp_'), `response ${JSON.stringify(r).slice(0, 300)}`)
    checkEcho(echoed(r.output_text), model, { system: settings.system, temperature: settings.temperature, top_p: settings.top_p, max_tokens: settings.max_tokens })
    check(r.usage.total_tokens > 0, `usage ${JSON.stringify(r.usage)}`)
  })

  await step(`openai: ${model} responses.create streamed, with message items`, async () => {
    const stream = await openai.responses.create({
      model, stream: true,
      input: [
        { role: 'system', content: settings.system },
        { role: 'user', content: [{ type: 'input_text', text: queryFor(model, tag('ECHO')) }] },
      ],
      temperature: settings.temperature, top_p: settings.top_p, max_output_tokens: settings.max_tokens,
    })
    const types = []
    let text = ''
    let completed = null
    for await (const ev of stream) {
      types.push(ev.type)
      if (ev.type === 'response.output_text.delta') text += ev.delta
      if (ev.type === 'response.completed') completed = ev.response
    }
    check(types[0] === 'response.created' && types.at(-1) === 'response.completed' && types.includes('response.output_text.delta'), `events ${types}`)
    check(completed?.usage?.total_tokens > 0, `completed ${JSON.stringify(completed).slice(0, 300)}`)
    checkEcho(echoed(text), model, { system: settings.system, temperature: settings.temperature, top_p: settings.top_p, max_tokens: settings.max_tokens })
  })

  await step(`openai: ${model} responses.parse with a JSON schema`, async () => {
    const r = await openai.responses.parse({
      model, input: queryFor(model, tag('Describe a person')),
      text: { format: zodTextFormat(Person, 'person') },
    })
    check(typeof r.output_parsed?.name === 'string' && typeof r.output_parsed?.age === 'number', `parsed ${JSON.stringify(r.output_parsed)}`)
  })
}

await step('openai: previous_response_id is refused clearly', async () => {
  try {
    await openai.responses.create({ model: 'madspark-direct', input: 'hi', previous_response_id: 'resp_123' })
    throw new Error('accepted')
  } catch (err) {
    check(err instanceof OpenAI.BadRequestError && err.param === 'previous_response_id' && /does not store responses/.test(err.message), `${err}`)
  }
})

await step('openai: an unknown route is a 404 in OpenAI\'s error shape, for any method', async () => {
  try {
    await openai.embeddings.create({ model: 'madspark-direct', input: 'hi' })
    throw new Error('accepted')
  } catch (err) {
    check(err instanceof OpenAI.NotFoundError && err.code === 'unknown_url', `${err}`)
  }
  for (const method of ['GET', 'POST', 'DELETE']) {
    const res = await fetch(`${v1}/no-such-endpoint`, { method, headers: { 'content-type': 'application/json' }, body: method === 'POST' ? '{}' : undefined })
    const body = await res.json()
    check(res.status === 404 && body.error?.message && body.error?.type && body.error?.code === 'unknown_url', `${method}: ${res.status} ${JSON.stringify(body)}`)
  }
})

// --- LangChain's ChatOpenAI --------------------------------------------------

const chat = (model, fields = {}) => new ChatOpenAI({ model, apiKey: 'sk-local', configuration: { baseURL: v1 }, maxRetries: 0, ...fields })

for (const model of models) {
  await step(`langchain: ${model} invoke and stream with a system message and settings`, async () => {
    const llm = chat(model, { temperature: settings.temperature, topP: settings.top_p, maxTokens: settings.max_tokens })
    const msgs = (t) => [new SystemMessage(settings.system), new HumanMessage(queryFor(model, tag(t)))]
    const m = await llm.invoke(msgs('ECHO'), { stop: settings.stop, seed: settings.seed })
    checkEcho(echoed(m.content), model, settings)
    check(m.response_metadata?.finish_reason === 'stop', `finish_reason ${m.response_metadata?.finish_reason}`)
    let text = ''
    for await (const chunk of await llm.stream(msgs('ECHO'), { stop: settings.stop, seed: settings.seed })) text += chunk.content
    checkEcho(echoed(text), model, settings)
  })

  await step(`langchain: ${model} withStructuredOutput (JSON schema, JSON mode, streamed)`, async () => {
    const llm = chat(model)
    const p = await llm.withStructuredOutput(Person, { name: 'person' }).invoke(queryFor(model, tag('Describe a person')))
    check(typeof p.name === 'string' && typeof p.age === 'number', `json schema: ${JSON.stringify(p)}`)
    const j = await llm.withStructuredOutput(Person, { method: 'jsonMode' }).invoke(queryFor(model, tag('Describe a person in JSON')))
    deepStrictEqual(j, { name: 'Ada Lovelace', age: 36 })
    let last = null
    for await (const chunk of await llm.withStructuredOutput(Person, { name: 'person' }).stream(queryFor(model, tag('Describe a person')))) last = chunk
    check(typeof last?.name === 'string' && typeof last?.age === 'number', `streamed: ${JSON.stringify(last)}`)
  })
}

await step('langchain: a fenced, imperfect JSON reply is repaired to the schema', async () => {
  const p = await chat('madspark-direct').withStructuredOutput(Person, { name: 'flawed_person' }).invoke('Describe Ada Lovelace, please')
  deepStrictEqual(p, { name: 'Ada Lovelace', age: 36 })
})

// --- the Vercel AI SDK ---------------------------------------------------------

const provider = createOpenAI({ baseURL: v1, apiKey: 'sk-local' })

for (const model of models) {
  await step(`ai-sdk: ${model} chat model, generateText and streamText with instructions and settings`, async () => {
    const args = (t) => ({
      model: provider.chat(model), instructions: settings.system, prompt: queryFor(model, tag(t)), maxRetries: 0,
      temperature: settings.temperature, topP: settings.top_p, maxOutputTokens: settings.max_tokens, stopSequences: settings.stop, seed: settings.seed,
    })
    const r = await generateText(args('ECHO'))
    check(r.finishReason === 'stop', `finishReason ${r.finishReason}`)
    checkEcho(echoed(r.text), model, settings)
    const s = streamText(args('ECHO'))
    let text = ''
    for await (const t of s.textStream) text += t
    checkEcho(echoed(text), model, settings)
  })

  await step(`ai-sdk: ${model} chat model, an object output generated and streamed (schema and no schema)`, async () => {
    const { output } = await generateText({ model: provider.chat(model), output: Output.object({ schema: Person }), prompt: queryFor(model, tag('Describe a person')), maxRetries: 0 })
    check(typeof output.name === 'string' && typeof output.age === 'number', `object ${JSON.stringify(output)}`)
    const s = streamText({ model: provider.chat(model), output: Output.object({ schema: Person }), prompt: queryFor(model, tag('Describe a person')), maxRetries: 0 })
    let last = null
    for await (const partial of s.partialOutputStream) last = partial
    const final = await s.output
    check(typeof final.name === 'string' && typeof final.age === 'number' && last?.name === final.name, `streamed ${JSON.stringify(final)}`)
    const free = await generateText({ model: provider.chat(model), output: Output.json(), prompt: queryFor(model, tag('A person as JSON')), maxRetries: 0 })
    deepStrictEqual(free.output, { name: 'Ada Lovelace', age: 36 })
  })

  await step(`ai-sdk: ${model} default model (the Responses API): text, stream and object`, async () => {
    const args = (t) => ({
      model: provider(model), instructions: settings.system, prompt: queryFor(model, tag(t)), maxRetries: 0,
      temperature: settings.temperature, topP: settings.top_p, maxOutputTokens: settings.max_tokens,
    })
    const want = { system: settings.system, temperature: settings.temperature, top_p: settings.top_p, max_tokens: settings.max_tokens }
    const r = await generateText(args('ECHO'))
    check(r.finishReason === 'stop' && r.usage.totalTokens > 0, `finishReason ${r.finishReason}, usage ${JSON.stringify(r.usage)}`)
    checkEcho(echoed(r.text), model, want)
    let text = ''
    for await (const t of streamText(args('ECHO')).textStream) text += t
    checkEcho(echoed(text), model, want)
    const { output } = await generateText({ model: provider(model), output: Output.object({ schema: Person }), prompt: queryFor(model, tag('Describe a person')), maxRetries: 0 })
    check(typeof output.name === 'string' && typeof output.age === 'number', `object ${JSON.stringify(output)}`)
  })
}

// --- tools through madspark-direct ----------------------------------------------

const cityParams = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }
const weatherTool = { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: cityParams, strict: true } }
const weather = (city) => `It is sunny in ${city}.`

await step('openai: tool calls, plain and streamed, and their results sent back', async () => {
  const messages = [{ role: 'user', content: tag('What is the weather in Oslo?') }]
  const c = await openai.chat.completions.create({ model: 'madspark-direct', messages, tools: [weatherTool], tool_choice: 'auto', parallel_tool_calls: false })
  const calls = c.choices[0].message.tool_calls
  check(c.choices[0].finish_reason === 'tool_calls' && calls?.length === 1 && calls[0].type === 'function' && calls[0].function.name === 'get_weather',
    `completion ${JSON.stringify(c.choices[0])}`)
  const { city } = JSON.parse(calls[0].function.arguments)
  check(typeof city === 'string' && city !== '', `arguments ${calls[0].function.arguments}`)

  // Streamed: the client's stream helper puts the tool_calls deltas together.
  const stream = openai.chat.completions.stream({ model: 'madspark-direct', messages, tools: [weatherTool] })
  let deltas = 0
  stream.on('chunk', (ch) => { if (ch.choices[0]?.delta?.tool_calls) deltas++ })
  const final = await stream.finalChatCompletion()
  const streamed = final.choices[0].message.tool_calls
  check(final.choices[0].finish_reason === 'tool_calls' && streamed?.[0]?.function.arguments === calls[0].function.arguments && deltas >= 1,
    `streamed ${JSON.stringify(final.choices[0])} in ${deltas} deltas`)

  // The call's result goes back, with the assistant message as the client got it.
  const answer = await openai.chat.completions.create({
    model: 'madspark-direct', tools: [weatherTool],
    messages: [...messages, final.choices[0].message, { role: 'tool', tool_call_id: streamed[0].id, content: weather(city) }],
  })
  check(answer.choices[0].finish_reason === 'stop' && answer.choices[0].message.content.includes(weather(city)), `answer ${JSON.stringify(answer.choices[0])}`)
})

await step('openai: a Responses function_call round trip, plain and streamed', async () => {
  const tools = [{ type: 'function', name: 'get_weather', description: 'The weather in a city', parameters: cityParams, strict: true }]
  const input = [{ role: 'user', content: tag('What is the weather in Oslo?') }]
  const r = await openai.responses.create({ model: 'madspark-direct', input, tools })
  const call = r.output.find((o) => o.type === 'function_call')
  check(r.status === 'completed' && call?.name === 'get_weather' && call.call_id, `response ${JSON.stringify(r.output)}`)
  const { city } = JSON.parse(call.arguments)
  const r2 = await openai.responses.create({
    model: 'madspark-direct', tools,
    input: [...input, ...r.output, { type: 'function_call_output', call_id: call.call_id, output: weather(city) }],
  })
  check(r2.output_text.includes(weather(city)), `answer ${JSON.stringify(r2.output)}`)

  const s = await openai.responses.create({ model: 'madspark-direct', input, tools, stream: true })
  const types = []
  let args = ''
  let completed = null
  for await (const ev of s) {
    types.push(ev.type)
    if (ev.type === 'response.function_call_arguments.delta') args += ev.delta
    if (ev.type === 'response.completed') completed = ev.response
  }
  const done = completed?.output?.find((o) => o.type === 'function_call')
  check(types.includes('response.function_call_arguments.done') && args === call.arguments && done?.arguments === call.arguments, `events ${types}`)
})

for (const [api, model] of [['Responses', (c) => new OpenAIResponsesModel(c, 'madspark-direct')], ['chat', (c) => new OpenAIChatCompletionsModel(c, 'madspark-direct')]]) {
  await step(`agents: an Agents SDK agent with a function tool on madspark-direct through the ${api} model`, async () => {
    const ran = []
    const getWeather = tool({
      name: 'get_weather', description: 'The weather in a city', parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => { ran.push(city); return weather(city) },
    })
    const agent = new Agent({ name: 'Weather', instructions: 'You answer questions about the weather.', tools: [getWeather], model: model(openai) })
    const result = await run(agent, tag('What is the weather in Oslo?'))
    check(ran.length === 1 && String(result.finalOutput).includes(weather(ran[0])), `tool ran with ${JSON.stringify(ran)}, final output ${result.finalOutput}`)
  })
}

for (const [api, model] of [['Responses', (id) => provider(id)], ['chat', (id) => provider.chat(id)]]) {
  await step(`ai-sdk: generateText and streamText with a tool on madspark-direct through the ${api} model`, async () => {
    const ran = []
    const tools = {
      get_weather: aiTool({
        description: 'The weather in a city', inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => { ran.push(city); return weather(city) },
      }),
    }
    const args = () => ({ model: model('madspark-direct'), tools, stopWhen: stepCountIs(2), prompt: tag('What is the weather in Oslo?'), maxRetries: 0 })
    const r = await generateText(args())
    check(ran.length === 1 && r.steps.length === 2 && r.steps[0].finishReason === 'tool-calls' && r.text.includes(weather(ran[0])),
      `tool ran with ${JSON.stringify(ran)}, ${r.steps.length} steps, text ${r.text}`)
    const s = streamText(args())
    let text = ''
    for await (const t of s.textStream) text += t
    check(ran.length === 2 && text.includes(weather(ran[1])), `streamed: tool ran with ${JSON.stringify(ran)}, text ${text}`)
  })
}

for (const useResponsesApi of [false, true]) {
  await step(`langchain: createAgent with a function tool on madspark-direct${useResponsesApi ? ' over the Responses API' : ''}`, async () => {
    const ran = []
    const getWeather = lcTool(async ({ city }) => { ran.push(city); return weather(city) },
      { name: 'get_weather', description: 'The weather in a city', schema: z.object({ city: z.string() }) })
    const agent = createAgent({ model: chat('madspark-direct', { useResponsesApi }), tools: [getWeather] })
    const res = await agent.invoke({ messages: [{ role: 'user', content: tag('What is the weather in Oslo?') }] })
    const last = res.messages.at(-1)
    check(ran.length === 1 && String(last.text ?? last.content).includes(weather(ran[0])), `tool ran with ${JSON.stringify(ran)}, last message ${JSON.stringify(last.content)}`)
  })
}

// --- LangChain's agents: a structured response, or an error ---------------------

for (const [model, url] of [['madspark-direct', v1], ['madspark-spark', mockV1]]) {
  for (const useResponsesApi of [false, true]) {
    await step(`langchain: createAgent with a responseFormat on ${model}${useResponsesApi ? ' over the Responses API' : ''} returns a value or an error, never undefined`, async () => {
      const agent = createAgent({ model: chat(model, { configuration: { baseURL: url }, useResponsesApi }), tools: [], responseFormat: Person })
      let res
      try {
        res = await agent.invoke({ messages: [{ role: 'user', content: tag('Describe a person') }] })
      } catch (err) {
        // A pipeline model has no step that calls tools nor writes JSON: it says so.
        check(model !== 'madspark-direct' && /tools|response_format|text\.format/.test(String(err?.message)), `error ${err}`)
        return
      }
      const p = res.structuredResponse
      check(typeof p?.name === 'string' && typeof p?.age === 'number', `structuredResponse ${JSON.stringify(p)}`)
    })
  }
}

// --- every client's defaults on every model -------------------------------------

const everyModel = [[v1, 'madspark-direct'], [v1, 'madspark-debate'],
  ...['madspark-direct', 'madspark-debate', 'madspark-spark', 'madspark-chaos', 'madspark-assess'].map((m) => [mockV1, m])]
const mockOpenAI = new OpenAI({ baseURL: mockV1, apiKey: 'sk-local', maxRetries: 0 })
const clientOf = (url) => (url === v1 ? openai : mockOpenAI)
const pipeline = (m) => ['madspark-spark', 'madspark-chaos', 'madspark-assess'].includes(m)

for (const [url, model] of everyModel) {
  const where = url === v1 ? 'the OpenAI provider' : 'the mock provider'
  await step(`promptfoo's defaults (temperature 0, max_tokens 1024) on ${model} (${where})`, async () => {
    // The bodies promptfoo's OpenAI chat and Responses providers
    // (openai:chat:<model>, openai:responses:<model>) send with their
    // default settings, as promptfoo 0.123.1 sends them.
    const post = async (path, body) => {
      const res = await fetch(`${url}/${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-local' }, body: JSON.stringify(body) })
      return [res.status, await res.json()]
    }
    const query = model === 'madspark-debate' ? complex : 'urban farming'
    const [status, c] = await post('chat/completions', { model, messages: [{ role: 'user', content: query }], max_tokens: 1024, temperature: 0 })
    check(status === 200 && c.choices[0].message.content.length > 0 && ['stop', 'length'].includes(c.choices[0].finish_reason), `chat: ${status} ${JSON.stringify(c).slice(0, 300)}`)
    const [rstatus, r] = await post('responses', { model, input: query, max_output_tokens: 1024, temperature: 0, text: { format: { type: 'text' } } })
    check(rstatus === 200 && r.output.some((o) => o.type === 'message') && ['completed', 'incomplete'].includes(r.status), `responses: ${rstatus} ${JSON.stringify(r).slice(0, 300)}`)
    if (pipeline(model)) {
      // The answer is bounded by max_tokens: a tight limit cuts it.
      const [, cut] = await post('chat/completions', { model, messages: [{ role: 'user', content: query }], max_tokens: 12, temperature: 0 })
      check(cut.choices[0].finish_reason === 'length' && cut.choices[0].message.content.length < c.choices[0].message.content.length, `max_tokens 12: ${JSON.stringify(cut.choices[0])}`)
    }
  })

  await step(`agents: the Agents SDK's instructions on ${model} (${where})`, async () => {
    const agent = new Agent({ name: 'Helper', instructions: 'You are a helpful assistant. Be concise.', model: new OpenAIResponsesModel(clientOf(url), model) })
    const result = await run(agent, model === 'madspark-debate' ? complex : 'urban farming')
    check(typeof result.finalOutput === 'string' && result.finalOutput.length > 0, `final output ${result.finalOutput}`)
  })
}

// --- a pipeline model shows its work while it runs --------------------------------

await step('openai: a streamed pipeline model sends its stages as reasoning before its answer', async () => {
  const stream = await mockOpenAI.chat.completions.create({ model: 'madspark-spark', stream: true, messages: [{ role: 'user', content: 'urban farming' }] })
  let reasoning = ''
  let content = ''
  let reasoningAfterContent = false
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta ?? {}
    if (d.reasoning_content) {
      reasoningAfterContent ||= content !== ''
      reasoning += d.reasoning_content
    }
    content += d.content ?? ''
  }
  check(/^generate: /.test(reasoning) && /\nevaluate: /.test(reasoning) && !reasoningAfterContent, `reasoning ${JSON.stringify(reasoning)}`)
  check(content.includes('urban farming') && !content.includes('generate: '), `content ${content.slice(0, 200)}`)

  const events = await mockOpenAI.responses.create({ model: 'madspark-spark', stream: true, input: 'urban farming' })
  const types = []
  let summary = ''
  for await (const ev of events) {
    types.push(ev.type)
    if (ev.type === 'response.reasoning_summary_text.delta') summary += ev.delta
  }
  const first = (t) => types.indexOf(t)
  check(first('response.reasoning_summary_text.delta') > 0 && first('response.reasoning_summary_text.delta') < first('response.output_text.delta') &&
    summary === reasoning, `events ${types.join(' ')}; summary ${JSON.stringify(summary)}`)
})

// --- a chat UI's follow-up to a pipeline model ---------------------------------

await step('a chat UI\'s follow-up to a pipeline model is answered for its last message, the earlier turns reaching every call', async () => {
  const mockBase = opts['mock-url'].replace(/\/$/, '')
  const first = await mockOpenAI.chat.completions.create({ model: 'madspark-spark', messages: [{ role: 'user', content: 'urban farming' }] })
  const report = first.choices[0].message.content
  // What Open WebUI and LibreChat send for the next turn: every message
  // again, streamed with usage; LibreChat adds its user's ID.
  const conversation = [
    { role: 'system', content: 'Keep it short.' },
    { role: 'user', content: 'urban farming' },
    { role: 'assistant', content: report },
    { role: 'user', content: 'only on balconies' },
  ]
  const stream = await mockOpenAI.chat.completions.create({
    model: 'madspark-spark', stream: true, stream_options: { include_usage: true }, user: '652ac880c4102a77fe54c5db', messages: conversation,
  })
  let content = ''
  let reasoning = ''
  let runID = ''
  for await (const chunk of stream) {
    content += chunk.choices[0]?.delta?.content ?? ''
    reasoning += chunk.choices[0]?.delta?.reasoning_content ?? ''
    runID = chunk.madspark?.run_id || runID
  }
  check(content.includes('only on balconies') && /^generate: /.test(reasoning) && runID !== '', `answer ${content.slice(0, 200)}, run ${runID}`)
  const run = await (await fetch(`${mockBase}/api/runs/${runID}`)).json()
  deepStrictEqual(run.tags, ['user=652ac880c4102a77fe54c5db'])
  // The run's calls, once its journal holds them all (spark makes six).
  let calls = []
  for (const deadline = Date.now() + 10000; calls.length < 6 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    const view = await (await fetch(`${mockBase}/api/runs/${runID}/steps`)).json()
    calls = view.steps.flatMap((s) => s.calls)
  }
  const earlier = `--- user ---\nurban farming\n--- assistant ---\n${report}`
  const without = calls.find((c) => !(c.prompt[0].role === 'system' && c.prompt[0].content.includes('Keep it short.') && c.prompt[0].content.endsWith(earlier)))
  check(calls.length >= 6 && !without, `${calls.length} calls; one without the instructions and the earlier turns: ${String(JSON.stringify(without?.prompt?.[0])).slice(0, 400)}`)

  // The Responses API's input items do the same.
  const r = await mockOpenAI.responses.create({ model: 'madspark-chaos', input: conversation.slice(1).map((m) => ({ role: m.role, content: m.content })) })
  check(r.status === 'completed' && r.output_text.includes('only on balconies'), `responses: ${r.status} ${r.output_text.slice(0, 200)}`)

  // An answer begun after the last user message cannot be continued by a pipeline: it is refused naming it.
  try {
    await mockOpenAI.chat.completions.create({ model: 'madspark-spark', messages: [...conversation, { role: 'assistant', content: 'Sure, here are' }] })
    throw new Error('a message after the last user message was accepted')
  } catch (err) {
    check(err instanceof OpenAI.BadRequestError && err.param === 'messages[4]', `${err}`)
  }
})

// --- capacity: the provider's one slot and four places in line are full -------

await step('a capacity refusal is a 429 with Retry-After before any byte, and records no run', async () => {
  // Five streams that the provider holds: one call in flight, four waiting.
  const held = Array.from({ length: 5 }, (_, i) =>
    fetch(`${v1}/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'madspark-direct', stream: true, messages: [{ role: 'user', content: `HOLD ${i}` }] }),
    }))
  const deadline = Date.now() + 30000
  for (;;) {
    const m = await (await fetch(`${base}/metrics`)).text()
    const n = Number(/^madspark_streams_in_flight (\d+)/m.exec(m)?.[1] ?? 0)
    if (n >= 5) break
    check(Date.now() < deadline, `only ${n} streams admitted after 30 s`)
    await new Promise((r) => setTimeout(r, 50))
  }
  const marker = tag('REFUSED')
  try {
    const s = await openai.chat.completions.create({ model: 'madspark-direct', stream: true, messages: [{ role: 'user', content: `${marker} What is Rust?` }] })
    for await (const _ of s) { /* drain */ }
    throw new Error('a request beyond the queue was accepted')
  } catch (err) {
    check(err instanceof OpenAI.RateLimitError && Number(err.headers.get('retry-after')) >= 1, `${err}`)
  }
  const raw = await fetch(`${v1}/responses`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'madspark-direct', stream: true, input: `${marker} What is Rust?` }),
  })
  const body = await raw.json()
  check(raw.status === 429 && raw.headers.get('content-type') === 'application/json' && body.error?.code === 'rate_limit_exceeded', `responses: ${raw.status} ${JSON.stringify(body)}`)
  const runs = await (await fetch(`${base}/api/runs?q=${marker}`)).json()
  check(runs.runs.length === 0, `refused requests were recorded as runs: ${JSON.stringify(runs.runs)}`)

  // Let the held calls go: the provider's own endpoint takes the word.
  await fetch(`${opts.provider.replace(/\/$/, '')}/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'RELEASE' }] }),
  })
  for (const res of await Promise.all(held)) {
    const text = await res.text()
    check(res.status === 200 && text.includes('held') && text.includes('[DONE]'), `a held stream: ${res.status} ${text.slice(0, 200)}`)
  }
})

console.log(`clients: ${passed} passed, ${failed} failed`)
process.exit(failed > 0 ? 1 : 0)
