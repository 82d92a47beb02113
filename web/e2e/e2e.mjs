#!/usr/bin/env node
// End-to-end test of the web UI in a real headless Chromium, against a
// running `madspark serve` in mock mode:
//
//   node e2e/e2e.mjs --url http://127.0.0.1:8080 --screenshots e2e/screenshots [--chromium /usr/bin/chromium]
//
// It fills the spark form, submits it with Ctrl+Enter, watches the progress
// go through the stages, checks the results and their charts, opens one LLM
// call on the run's timeline and reads its prompt, bookmarks a candidate,
// finds it in the bookmarks view, chats with the debate assistant (a
// streamed answer, a follow-up, "How this answer was made", the sidebar
// after a reload), runs axe-core on every page, and checks a 375px-wide
// screen. Each step writes a screenshot. Exit status 0 means every step
// passed; the cmd/madspark Go test TestWebUIEndToEnd runs this script.

import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { createRequire } from 'node:module'
import { chromium } from 'playwright-core'

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

const { values: opts } = parseArgs({
  options: {
    url: { type: 'string' },
    screenshots: { type: 'string', default: 'e2e/screenshots' },
    chromium: { type: 'string', default: process.env.MADSPARK_CHROMIUM || '/usr/bin/chromium' },
    timeout: { type: 'string', default: '30000' },
  },
})
if (!opts.url) {
  console.error('e2e: --url is required (the address of a running `madspark serve`)')
  process.exit(2)
}
const base = opts.url.replace(/\/$/, '')
const shots = resolve(opts.screenshots)
const timeout = Number(opts.timeout)
mkdirSync(shots, { recursive: true })

const topic = 'sustainable urban farming'
const context = 'low-cost, scalable solutions'
const tag = 'e2e-rooftop'

let passed = 0
let failed = 0
let shotNo = 0
const problems = [] // console errors and failed requests of the page

class StepError extends Error {}
function check(ok, message) {
  if (!ok) throw new StepError(message)
}

async function shot(page, name, fullPage = true) {
  shotNo++
  const file = join(shots, `${String(shotNo).padStart(2, '0')}-${name}.png`)
  await page.screenshot({ path: file, fullPage })
  return file
}

async function step(name, page, fn) {
  const t0 = Date.now()
  try {
    await fn()
    passed++
    console.log(`ok   ${name} (${Date.now() - t0} ms)`)
  } catch (err) {
    failed++
    console.log(`FAIL ${name}: ${String(err?.message ?? err).split('\n').slice(0, 12).join('\n     ')}`)
    if (page) {
      try {
        console.log(`     screenshot: ${await shot(page, 'failure-' + name.replace(/\W+/g, '-'))}`)
      } catch {
        // the page may be gone
      }
    }
    throw err
  }
}

function watch(page) {
  page.on('console', (m) => {
    // The browser logs the API's expected refusals (a duplicate bookmark,
    // a value out of range) as failed loads: they are part of the flow.
    if (m.type() === 'error' && !/Failed to load resource: .* status of (409|422) /.test(m.text())) problems.push(`console: ${m.text()}`)
  })
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
  page.on('requestfailed', (r) => {
    // An aborted fetch or a closed stream after the run is over is normal.
    const f = r.failure()?.errorText ?? ''
    if (!/ERR_ABORTED/.test(f)) problems.push(`request failed: ${r.method()} ${r.url()} ${f}`)
  })
}

// accessible runs axe-core in the page and fails on any serious or
// critical violation.
// poll evaluates fn in the page every `every` ms until it returns a truthy
// value, and returns that value; after `tries` attempts it returns undefined.
async function poll(page, fn, { tries = 50, every = 200 } = {}) {
  for (let i = 0; i < tries; i++) {
    const v = await page.evaluate(fn)
    if (v) return v
    await new Promise((r) => setTimeout(r, every))
  }
  return undefined
}

async function accessible(page, what) {
  // Evaluated by the debugger, which the page's Content-Security-Policy
  // (no inline scripts) does not govern.
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource)
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] })
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 2).map((n) => n.target.join(' ')).join(', ')}`)
  })
  check(found.length === 0, `${what}: ${found.join(' | ')}`)
}

// noHorizontalScroll checks that nothing is wider than the viewport.
async function noHorizontalScroll(page, width) {
  const m = await page.evaluate(() => {
    const wide = [...document.querySelectorAll('body *')]
      .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
      .filter((el) => !el.closest('.sr-only') && getComputedStyle(el).position !== 'fixed')
      .slice(0, 3)
      .map((el) => `${el.tagName.toLowerCase()}.${[...el.classList].join('.')} (${Math.round(el.getBoundingClientRect().right)}px)`)
    return { scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth, wide }
  })
  check(m.client <= width && m.scroll <= width, `page is ${m.scroll}px wide on a ${width}px screen; too wide: ${m.wide.join(', ')}`)
}

const userDataDir = mkdtempSync(join(tmpdir(), 'madspark-e2e-'))
const args = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]
let ctx
let exitCode = 0
try {
  // A persistent context is how Playwright takes a fresh --user-data-dir.
  ctx = await chromium.launchPersistentContext(userDataDir, {
    executablePath: opts.chromium,
    headless: true,
    args,
    viewport: { width: 1280, height: 900 },
    acceptDownloads: true,
    reducedMotion: 'reduce',
  })
  ctx.setDefaultTimeout(timeout)
  const page = ctx.pages()[0] ?? (await ctx.newPage())
  watch(page)
  let runURL = ''

  await step('the form is generated from the pipelines the API lists', page, async () => {
    await page.goto(base + '/')
    await page.getByRole('heading', { name: 'New run' }).waitFor()
    const pipeline = page.getByLabel('Pipeline')
    const options = await pipeline.locator('option').evaluateAll((os) => os.map((o) => o.value))
    check(options.includes('spark'), `the pipeline list has no spark: ${options}`)
    await pipeline.selectOption('spark')
    await page.getByLabel('Topic', { exact: false }).first().waitFor()
    // Every control has an accessible name.
    const unnamed = await page.evaluate(() =>
      [...document.querySelectorAll('main input, main select, main textarea, main button')]
        .filter((el) => !(el.labels?.length || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || (el.tagName === 'BUTTON' && el.textContent.trim())))
        .map((el) => el.outerHTML.slice(0, 80)),
    )
    check(unnamed.length === 0, `controls without a label: ${unnamed.join(' | ')}`)
  })

  await step('advanced options are folded under "Advanced" at first', page, async () => {
    const advanced = page.locator('details.advanced')
    check(!(await advanced.evaluate((d) => d.open)), 'the advanced options are unfolded at first')
    check(!(await page.locator('#run-form-num_candidates').isVisible()), 'the number of candidates is shown at first sight')
    await advanced.locator('summary').click()
    await page.locator('#run-form-num_candidates').waitFor()
  })

  await step('a value out of range is refused beside its field', page, async () => {
    const n = page.locator('#run-form-num_candidates')
    await n.fill('99')
    await page.getByRole('button', { name: 'Start run' }).click()
    const err = page.locator('#run-form-num_candidates-error')
    await err.waitFor()
    check(/at most/.test(await err.textContent()), `unexpected message: ${await err.textContent()}`)
    check(new URL(page.url()).pathname === '/', 'the form was submitted anyway')
  })

  await step('fill the spark form', page, async () => {
    await page.locator('#run-form-topic').fill(topic)
    await page.locator('#run-form-context').fill(context)
    await page.locator('#run-form-num_candidates').fill('4')
    await page.locator('#run-form-num_top_candidates').fill('2')
    const er = page.locator('#run-form-enhanced_reasoning')
    if ((await er.count()) > 0 && !(await er.isChecked())) await er.check()
    // A temperature preset, when the form offers one (a parameter, or a
    // chooser over the temperatures group).
    const preset = page.getByLabel('Temperature preset')
    if ((await preset.count()) > 0) {
      const names = await preset.locator('option').evaluateAll((os) => os.map((o) => o.value).filter(Boolean))
      check(names.length > 0, 'the temperature preset list is empty')
      await preset.selectOption(names.includes('balanced') ? 'balanced' : names[0])
    }
    check((await page.locator('#run-form-num_candidates-error').count()) === 0, 'the error stayed after fixing the value')
    await shot(page, 'form')
  })

  const seen = new Set()
  await step('submit with Ctrl+Enter and watch progress by stage', page, async () => {
    await page.locator('#run-form-topic').focus()
    await page.keyboard.press('Control+Enter')
    await page.waitForURL(/\/runs\/[^/]+$/)
    runURL = page.url()
    await page.getByTestId('progress').waitFor()
    // Sample the stage list until the run is over.
    let shotTaken = false
    const deadline = Date.now() + timeout
    let last = 0
    for (;;) {
      const s = await page.evaluate(() => ({
        stages: [...document.querySelectorAll('.stages li')].map((li) => [li.dataset.stage, li.dataset.status]),
        value: Number(document.querySelector('[role=progressbar]')?.getAttribute('aria-valuenow') ?? 0),
        done: document.querySelectorAll('[data-testid=candidate]').length > 0 || !!document.querySelector('.status-failed'),
      }))
      for (const [name, status] of s.stages) seen.add(`${name}:${status}`)
      check(s.value >= last, `progress went back from ${last} to ${s.value}`)
      last = s.value
      if (!shotTaken && s.stages.length >= 2 && !s.done) {
        await shot(page, 'progress', false)
        shotTaken = true
      }
      if (s.done) break
      check(Date.now() < deadline, `the run did not finish; stages seen: ${[...seen]}`)
      await page.waitForTimeout(40)
    }
    const active = [...seen].filter((x) => x.endsWith(':active')).map((x) => x.split(':')[0])
    check(active.length >= 3, `saw fewer than 3 stages running: ${[...seen]}`)
    check(shotTaken, 'never saw the progress display with two stages')
    const transport = await page.locator('.progress .muted').textContent()
    console.log(`     stages seen running: ${active.join(', ')}; ${transport.trim()}`)
  })

  await step('results with both charts, in mock mode', page, async () => {
    await page.getByTestId('candidate').first().waitFor()
    check((await page.getByTestId('run-status').textContent()) === 'succeeded', 'the run did not succeed')
    const banners = page.getByTestId('mock-banner')
    check((await banners.count()) === 1 && (await banners.isVisible()), `${await banners.count()} mock-mode banners, want one`)
    const cards = await page.getByTestId('candidate').count()
    check(cards === 2, `expected 2 candidates, got ${cards}`)
    const first = page.getByTestId('candidate').first()
    for (const h of ['Idea', 'Critique', 'Advocacy', 'Skepticism', 'Improved idea']) {
      check(await first.getByRole('heading', { name: h, exact: true }).isVisible(), `candidate has no ${h}`)
    }
    // The charts are loaded with the first results.
    await page.locator('[data-testid=score-comparison] .recharts-bar-rectangle').first().waitFor()
    await page.locator('[data-testid=dimension-radar] .recharts-radar-polygon').first().waitFor()
    const bars = await page.locator('[data-testid=score-comparison] .recharts-bar-rectangle').count()
    check(bars === 4, `the score comparison has ${bars} bars, want 4 (2 candidates × initial, improved)`)
    const box = await page.locator('[data-testid=score-comparison] .recharts-wrapper > svg').first().boundingBox()
    check(box && box.width > 200 && box.height > 100, `the bar chart is ${JSON.stringify(box)}`)
    const radars = await page.getByTestId('dimension-radar').count()
    check(radars === 2, `expected a radar chart per candidate, got ${radars}`)
    const polys = await page.locator('[data-testid=dimension-radar] .recharts-radar-polygon').count()
    check(polys >= 2, `radar charts have ${polys} polygons`)
    await shot(page, 'results')
  })

  await step('the call timeline: open one call and see its prompt', page, async () => {
    const calls = page.getByTestId('timeline-call')
    await calls.first().waitFor()
    const n = await calls.count()
    check(n >= 4, `the timeline shows ${n} calls, want at least 4`)
    const bar = await calls.first().locator('.call-bar').boundingBox()
    check(bar && bar.width > 0, `the first call's bar is ${JSON.stringify(bar)}`)
    await calls.first().getByRole('button').click()
    const prompt = page.getByTestId('call-prompt')
    await prompt.waitFor()
    const text = (await prompt.textContent()) ?? ''
    check(text.includes(topic), `the first call's prompt does not name the topic: ${text.slice(0, 120)}`)
    check(/system/i.test(text), 'the prompt has no system message')
    const reply = (await page.getByTestId('call-response').textContent()) ?? ''
    check(reply.trim().length > 0, 'the call has no response')
    await page.getByTestId('call-detail').scrollIntoViewIfNeeded()
    await shot(page, 'call-timeline')
  })

  await step('export the run as CSV and PDF', page, async () => {
    for (const [format, ext, magic] of [['csv', 'csv', null], ['pdf', 'pdf', '%PDF-']]) {
      await page.getByLabel('Export format').selectOption(format)
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download' }).click()])
      const name = download.suggestedFilename()
      check(new RegExp(`^madspark-spark-[0-9A-Za-z]{8}\\.${ext}$`).test(name), `the ${format} export is named ${name}`)
      const file = join(userDataDir, name)
      await download.saveAs(file)
      const head = readFileSync(file).subarray(0, 5).toString('latin1')
      if (magic) check(head === magic, `the ${format} export starts with ${JSON.stringify(head)}`)
      else check(readFileSync(file, 'utf8').split('\n').length > 2, 'the CSV export has no rows')
    }
  })

  let idea = ''
  await step('bookmark a candidate', page, async () => {
    const first = page.getByTestId('candidate').first()
    idea = (await first.getByRole('heading', { name: 'Improved idea', exact: true }).locator('xpath=following-sibling::p[1]').textContent()).trim()
    await first.getByLabel('Tags').fill(`${tag}, farming`)
    await first.getByRole('button', { name: 'Bookmark candidate 1' }).click()
    await first.getByText('Bookmarked').waitFor()
    await shot(page, 'bookmarked')
  })

  await step('the same candidate again: the duplicate is refused, then saved on request', page, async () => {
    await page.reload()
    const first = page.getByTestId('candidate').first()
    await first.getByRole('button', { name: 'Bookmark candidate 1' }).click()
    const alert = first.getByRole('alert')
    await alert.waitFor()
    const text = await alert.textContent()
    check(/% similar/.test(text), `the refusal does not show the similar bookmark: ${text}`)
    await shot(page, 'duplicate-blocked')
    await alert.getByRole('button', { name: 'Save anyway' }).click()
    await first.getByText('Bookmarked').waitFor()
  })

  await step('find it in the bookmarks view by searching', page, async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Bookmarks' }).click()
    await page.getByRole('heading', { name: 'Bookmarks' }).waitFor()
    await page.getByLabel('Search', { exact: true }).fill('urban farming')
    await page.getByRole('button', { name: 'Search', exact: true }).click()
    await page.waitForURL(/[?&]q=urban/)
    const item = page.getByTestId('bookmark').filter({ hasText: `#${tag}` })
    await item.first().waitFor()
    const text = await item.first().textContent()
    check(text.includes(idea.slice(0, 40)), `the bookmark does not show the improved idea "${idea.slice(0, 40)}…": ${text.slice(0, 120)}`)
    // The tag filter finds it too.
    await page.getByLabel('Search', { exact: true }).fill('')
    await page.getByLabel('Tags', { exact: true }).fill(tag)
    await page.getByRole('button', { name: 'Search', exact: true }).click()
    await page.waitForURL(new RegExp(`[?&]tag=${tag}`))
    await page.getByTestId('bookmark').filter({ hasText: `#${tag}` }).first().waitFor()
    await shot(page, 'bookmarks')
  })

  await step('history lists the run', page, async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Runs' }).click()
    await page.getByLabel('Pipeline').selectOption('spark')
    const link = page.locator(`a[href="${new URL(runURL).pathname}"]`)
    await link.waitFor()
    await link.click()
    await page.getByTestId('candidate').first().waitFor()
  })

  await step('a pipeline file: its form generated from its inputs, a run and its report', page, async () => {
    // madspark serve --pipelines examples/pipelines serves pitch.yaml.
    await page.goto(base + '/')
    await page.getByRole('heading', { name: 'New run' }).waitFor()
    const pipeline = page.getByLabel('Pipeline')
    const options = await pipeline.locator('option').evaluateAll((os) => os.map((o) => o.value))
    check(options.includes('pitch'), `the pipeline list has no pitch: ${options}`)
    await pipeline.selectOption('pitch')
    const topicField = page.locator('#run-form-topic')
    await topicField.waitFor()
    const fields = await page.locator('main form [id^="run-form-"]').evaluateAll((els) => els.map((e) => e.id).filter((id) => !id.endsWith('-error')))
    check(fields.length === 1 && fields[0] === 'run-form-topic', `the pitch form has fields ${fields}, want only its topic input`)
    await topicField.fill('community tool libraries')
    await page.getByRole('button', { name: 'Start run' }).click()
    await page.waitForURL(/\/runs\/[^/]+$/)
    const status = page.getByTestId('run-status')
    await page.waitForFunction(() => document.querySelector('[data-testid=run-status]')?.textContent === 'succeeded')
    check((await status.textContent()) === 'succeeded', 'the pitch run did not succeed')
    const report = page.locator('section.results')
    await report.getByText('mock pitch for pitch.editor').first().waitFor()
    for (const agent of ['writer', 'fan', 'critic', 'editor']) {
      check(await report.getByRole('heading', { name: new RegExp(`\\b${agent}$`) }).isVisible(), `the report has no ${agent} section`)
    }
    await shot(page, 'pipeline-file')
  })

  await step('an eval: win rate with its interval, topics and links to their runs', page, async () => {
    const started = await page.evaluate(async () => {
      const r = await fetch('/api/evals', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ pipeline: 'spark', topics: 'builtin', limit: 2 }),
      })
      return { status: r.status, body: await r.json() }
    })
    check(started.status === 202 && started.body.run_id, `POST /api/evals answered ${started.status}`)
    await page.goto(`${base}/runs/${started.body.run_id}`)
    const headline = page.getByTestId('eval-headline')
    await headline.waitFor()
    check(/win rate \d+\.\d% \(95% CI \d+\.\d%–\d+\.\d%\)/.test(await headline.textContent()), 'the eval page shows no win rate with its interval')
    check((await page.getByRole('note').allTextContents()).some((t) => t.includes('proves nothing')), 'a mock eval does not say it proves nothing')
    check((await page.locator('figure.chart svg').count()) === 1, 'no win-rate chart')
    const rows = page.getByTestId('eval-topics').locator('tbody tr')
    check((await rows.count()) === 2, `the eval page lists ${await rows.count()} topics, want 2`)
    await shot(page, 'eval')
    await rows.first().getByRole('link').click()
    await page.getByTestId('candidate').first().waitFor()
  })

  await step('cancel a running run', page, async () => {
    await page.goto(base + '/?pipeline=spark')
    await page.locator('#run-form-topic').fill('community composting')
    await page.getByRole('button', { name: 'Start run' }).click()
    await page.waitForURL(/\/runs\/[^/]+$/)
    await page.getByRole('button', { name: 'Cancel run' }).click()
    await page.getByText('The run was cancelled.').waitFor()
    check((await page.getByTestId('run-status').textContent()) === 'cancelled', 'the run is not cancelled')
    check((await page.getByRole('button', { name: 'Cancel run' }).count()) === 0, 'the cancel button stayed')
    await shot(page, 'cancelled', false)
  })

  let batchURL = ''
  await step('batches: download the sample, upload a file with a bad row, watch each row live', page, async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Batches' }).click()
    await page.getByRole('heading', { name: 'Batches', exact: true }).waitFor()
    const [sample] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'sample_batch.csv' }).click()])
    check(sample.suggestedFilename() === 'sample_batch.csv', `the sample is named ${sample.suggestedFilename()}`)
    const sampleFile = join(userDataDir, 'sample_batch.csv')
    await sample.saveAs(sampleFile)
    check(readFileSync(sampleFile, 'utf8').startsWith('topic,context,'), 'the sample CSV has no header row')
    await page.getByLabel('Pipeline').selectOption('spark')
    const csv = 'topic,num_candidates\nrooftop beehives,2\nquiet streets,many\nshared tool libraries,2\n'
    await page.getByLabel('File (CSV or JSON)').setInputFiles({ name: 'e2e-batch.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) })
    await page.getByRole('button', { name: 'Start batch' }).click()
    await page.waitForURL(/\/batches\/[^/]+$/)
    batchURL = page.url()
    const rows = page.getByRole('table', { name: 'Rows' }).locator('tbody tr')
    await rows.nth(2).waitFor()
    check((await rows.count()) === 3, `the batch shows ${await rows.count()} rows`)
    const bad = rows.nth(1)
    check((await bad.getAttribute('data-status')) === 'rejected', 'line 3 is not rejected')
    const note = await bad.getByRole('note').textContent()
    check(/line 3: .*num_candidates: want an integer, got "many"/.test(note), `line 3's error: ${note}`)
    // Live: a row is seen running (or already further) before the batch finishes.
    await page.locator('tbody tr[data-status=running], tbody tr[data-status=succeeded]').first().waitFor()
    await shot(page, 'batch-running')
    await page.getByTestId('batch-counts').filter({ hasText: '2/3 succeeded' }).waitFor({ timeout: 60000 })
    await page.getByText('finished', { exact: true }).waitFor()
    check((await page.locator('tbody tr[data-status=succeeded]').count()) === 2, 'two rows did not succeed')
    await shot(page, 'batch-finished')
  })

  await step('batches: download the results and the zip of every row, open a row\'s run', page, async () => {
    const [res] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download results (JSON)' }).click()])
    const resFile = join(userDataDir, res.suggestedFilename())
    await res.saveAs(resFile)
    const doc = JSON.parse(readFileSync(resFile, 'utf8'))
    check(doc.total === 3 && doc.succeeded === 2 && doc.failed === 1 && doc.items[1].status === 'rejected', `results: ${JSON.stringify(doc).slice(0, 200)}`)
    const [zip] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: /Download every row/ }).click()])
    check(/^madspark-batch-[0-9a-f]{8}\.zip$/.test(zip.suggestedFilename()), `the zip is named ${zip.suggestedFilename()}`)
    const zipFile = join(userDataDir, zip.suggestedFilename())
    await zip.saveAs(zipFile)
    const bytes = readFileSync(zipFile)
    check(bytes.subarray(0, 2).toString('latin1') === 'PK', 'the zip is not a zip')
    check(bytes.includes(Buffer.from('line0002-rooftop-beehives-')) && bytes.includes(Buffer.from('results.json')), 'the zip lacks a row directory or results.json')
    await page.locator('tbody tr[data-status=succeeded]').first().getByRole('link').click()
    await page.waitForURL(/\/runs\/[^/]+$/)
    await page.getByTestId('candidate').first().waitFor()
    await page.goto(batchURL)
    await page.getByTestId('batch-counts').waitFor()
  })

  await step('keyboard: Tab reaches the form from the top of the page', page, async () => {
    await page.goto(base + '/')
    await page.locator('#run-form-topic').waitFor()
    const order = []
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab')
      order.push(await page.evaluate(() => document.activeElement?.id || document.activeElement?.textContent?.trim()))
    }
    check(order[0] === 'Skip to content', `the first Tab stop is ${order[0]}`)
    check(order.includes('pipeline') && order.includes('run-form-topic'), `Tab order: ${order.join(' → ')}`)
  })

  const narrow = await ctx.newPage()
  watch(narrow)
  await narrow.setViewportSize({ width: 375, height: 812 })
  await step('a 375px-wide screen: the form and the results fit', narrow, async () => {
    await narrow.goto(base + '/')
    await narrow.locator('#run-form-topic').waitFor()
    await noHorizontalScroll(narrow, 375)
    await shot(narrow, 'narrow-form')
    await narrow.goto(runURL)
    await narrow.getByTestId('candidate').first().waitFor()
    await narrow.locator('[data-testid=score-comparison] .recharts-bar-rectangle').first().waitFor()
    await narrow.getByTestId('timeline-call').first().waitFor()
    await narrow.getByTestId('timeline-call').first().getByRole('button').click()
    await narrow.getByTestId('call-prompt').waitFor()
    await noHorizontalScroll(narrow, 375)
    const box = await narrow.locator('[data-testid=score-comparison] .recharts-wrapper > svg').first().boundingBox()
    check(box && box.width <= 375 && box.width > 150, `the chart is ${box?.width}px wide on a 375px screen`)
    check(await narrow.getByRole('link', { name: 'Bookmarks' }).isVisible(), 'the navigation is hidden')
    await shot(narrow, 'narrow-results')
    await narrow.goto(base + '/bookmarks')
    await narrow.getByTestId('bookmark').first().waitFor()
    await noHorizontalScroll(narrow, 375)
    await shot(narrow, 'narrow-bookmarks')
  })

  const question = 'Explain step by step how to design a job queue, and compare the trade-offs of polling and notifications.'
  let firstAnswer = ''
  await step('chat: ask, and the answer streams in piece by piece', page, async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Chat' }).click()
    await page.getByRole('heading', { name: 'New chat' }).waitFor()
    const input = page.getByLabel('Your message')
    // Shift+Enter adds a line and sends nothing.
    await input.fill('first line')
    await input.press('Shift+Enter')
    await input.pressSequentially('second line')
    check((await input.inputValue()) === 'first line\nsecond line', `Shift+Enter gave ${JSON.stringify(await input.inputValue())}`)
    check((await page.getByTestId('question').count()) === 0, 'Shift+Enter sent the message')
    await input.fill(question)
    // Record the length of the answer under way at every change.
    await page.evaluate(() => {
      window.__lengths = []
      const log = document.querySelector('[data-testid=chat-log]')
      new MutationObserver(() => {
        const s = document.querySelector('[data-testid=streaming] .markdown')
        if (s) window.__lengths.push(s.textContent.length)
      }).observe(log, { subtree: true, childList: true, characterData: true })
    })
    await input.press('Enter')
    await page.waitForURL(/\/chat\/[^/]+$/)
    await page.getByTestId('streaming').waitFor()
    await shot(page, 'chat-streaming', false)
    await page.getByTestId('answer').first().waitFor()
    firstAnswer = (await page.getByTestId('answer').first().locator('.markdown').textContent()).trim()
    // The steps a reader saw: each part shown while it was being written,
    // then the whole answer.
    const whole = (await page.getByTestId('answer').first().locator('.markdown').textContent()).length
    const lengths = [...new Set([...(await page.evaluate(() => window.__lengths)), whole])].filter((n) => n > 0)
    check(lengths.length >= 3, `the answer appeared in ${lengths.length} steps (${lengths.join(', ')}), want at least 3`)
    check(lengths.every((n, i) => i === 0 || n > lengths[i - 1]), `the answer did not only grow: ${lengths.join(', ')}`)
    console.log(`     the answer grew in ${lengths.length} steps: ${lengths.join(' → ')} characters`)
    check(firstAnswer.length > 50, `a short answer: ${firstAnswer}`)
    check((await page.getByRole('heading', { level: 1 }).textContent()).startsWith('Explain step by step'), 'the conversation was not titled by its question')
  })

  await step('chat: a follow-up carries the first answer', page, async () => {
    const input = page.getByLabel('Your message')
    await input.fill('Which of the two would you pick for a small team, given your answer?')
    await input.press('Enter')
    await page.getByTestId('answer').nth(1).waitFor()
    const history = await page.evaluate(async () => {
      const id = location.pathname.split('/').pop()
      const conv = await (await fetch(`/api/conversations/${id}`)).json()
      const run = await (await fetch(`/api/runs/${conv.messages[3].run_id}`)).json()
      return run.params.history
    })
    check(history.length === 2 && history[0].content === question, `the follow-up's history: ${JSON.stringify(history).slice(0, 200)}`)
    check(history[1].role === 'assistant' && history[1].content.includes(firstAnswer.slice(0, 30)), 'the follow-up did not carry the first answer')
  })

  await step('chat: "How this answer was made" shows the route, handoffs and usage', page, async () => {
    const how = page.getByTestId('answer').first().locator('details.how-made')
    await how.locator('summary').click()
    const body = how.getByTestId('how-made')
    await body.waitFor()
    const text = await body.textContent()
    for (const want of ['debate', '% confident', 'drafter', 'critic', 'synthesizer', 'LLM calls', 'tokens', 'Search sources']) {
      check(text.includes(want), `"How this answer was made" lacks ${want}: ${text.slice(0, 200)}`)
    }
    check(!/\d\.\d{3,}/.test(text), `unrounded numbers: ${text.match(/\d\.\d{3,}/)}`)
    await shot(page, 'chat-how-made')
    await accessible(page, 'the chat page')
  })

  await step('chat: after a reload the conversation is in the sidebar, and can be renamed', page, async () => {
    const url = page.url()
    await page.goto(base + '/chat')
    const side = page.getByRole('navigation', { name: 'Conversations' })
    const link = side.getByRole('link', { name: /^Explain step by step/ })
    await link.waitFor()
    await link.click()
    await page.waitForURL(url)
    await page.getByTestId('answer').nth(1).waitFor()
    await side.getByRole('button', { name: /^Rename/ }).first().click()
    await side.getByLabel('New title').fill('Job queues')
    await side.getByRole('button', { name: 'Save' }).click()
    await side.getByRole('link', { name: 'Job queues' }).waitFor()
    await shot(page, 'chat-sidebar')
  })

  await step('chat: Stop ends an answer being written and cancels its run; Regenerate writes it again', page, async () => {
    const input = page.getByLabel('Your message')
    const answers = await page.getByTestId('answer').count()
    await input.fill('Explain step by step how to shard a job queue, and compare hashing with ranges.')
    await input.press('Enter')
    await page.getByTestId('streaming').waitFor()
    // Stop once the server is at work on the answer: a Stop that reaches the
    // server before it has started the run leaves no run to cancel.
    const started = await poll(page, async () => {
      const runs = await (await fetch('/api/runs?pipeline=debate&status=running')).json()
      return runs.runs.length > 0
    }, { tries: 200, every: 50 })
    check(started, 'the question was sent but no debate run started')
    // The answer grows above the composer while it is written; the click
    // lands where the button is at that moment.
    await page.getByRole('button', { name: 'Stop', exact: true }).click({ timeout: 5000, force: true })
    const stopped = page.getByTestId('stopped')
    await stopped.waitFor()
    check((await stopped.textContent()).includes('Stopped; this partial answer is not kept.'), 'the stopped answer does not say so')
    check((await page.getByTestId('answer').count()) === answers, 'a stopped answer was kept')
    await shot(page, 'chat-stopped', false)
    // The run was cancelled, and the question stays unanswered.
    const after = (await poll(page, async () => {
      const id = location.pathname.split('/').pop()
      const conv = await (await fetch(`/api/conversations/${id}`)).json()
      const runs = await (await fetch('/api/runs?pipeline=debate&status=cancelled')).json()
      return runs.runs.length > 0 && { last: conv.messages[conv.messages.length - 1], cancelled: runs.runs.length }
    })) ?? { cancelled: 0 }
    check(after.cancelled > 0, 'no debate run was recorded cancelled after Stop')
    check(after.last && after.last.role === 'user' && after.last.content.startsWith('Explain step by step how to shard'), `the conversation ends with ${JSON.stringify(after.last)}`)
    // Regenerate from the stopped answer: the question is answered.
    await stopped.getByRole('button', { name: 'Regenerate' }).click({ timeout: 5000 })
    await page.getByTestId('answer').nth(answers).waitFor()
    const regenerated = await page.evaluate(async () => {
      const id = location.pathname.split('/').pop()
      return (await (await fetch(`/api/conversations/${id}`)).json()).messages
    })
    const n = regenerated.length
    check(regenerated[n - 1].role === 'assistant' && regenerated[n - 2].content.startsWith('Explain step by step how to shard'), 'Regenerate did not answer the stopped question')
    // Regenerate a finished answer: it is replaced, not added to.
    const before = regenerated[n - 1]
    await page.getByTestId('answer').nth(answers).getByRole('button', { name: 'Regenerate' }).click({ timeout: 5000 })
    await page.getByTestId('streaming').waitFor()
    await page.getByTestId('answer').nth(answers).waitFor()
    const replaced = (await poll(page, async () => {
      const id = location.pathname.split('/').pop()
      const ms = (await (await fetch(`/api/conversations/${id}`)).json()).messages
      return ms[ms.length - 1].role === 'assistant' && ms
    })) ?? []
    check(replaced.length === n, `after Regenerate the conversation has ${replaced.length} messages, want ${n}`)
    check(replaced[n - 1].run_id && replaced[n - 1].run_id !== before.run_id, 'Regenerate did not make a new answer')
    check((await page.getByTestId('answer').count()) === answers + 1, 'Regenerate added an answer instead of replacing it')
  })

  let chatURL = ''
  await step('accessibility: no serious or critical axe-core violation on any page', page, async () => {
    chatURL = page.url()
    for (const [path, ready] of [
      ['/', '#run-form-topic'],
      ['/runs', 'h1'],
      [new URL(runURL).pathname, '[data-testid=candidate]'],
      ['/bookmarks', '[data-testid=bookmark]'],
      ['/settings', 'h1'],
      ['/chat', '#chat-input'],
      [new URL(chatURL).pathname, '[data-testid=answer]'],
      ['/no-such-page', 'h1'],
    ]) {
      await page.goto(base + path)
      await page.locator(ready).first().waitFor()
      await accessible(page, path)
    }
  })

  await step('a 375px-wide screen: every page fits, the chat works', narrow, async () => {
    for (const [path, ready, name] of [
      ['/runs', 'h1', 'narrow-runs'],
      ['/settings', 'h1', 'narrow-settings'],
      ['/chat', '#chat-input', 'narrow-chat-new'],
      [new URL(chatURL).pathname, '[data-testid=answer]', 'narrow-chat'],
    ]) {
      await narrow.goto(base + path)
      await narrow.locator(ready).first().waitFor()
      await noHorizontalScroll(narrow, 375)
      await accessible(narrow, `${path} at 375px`)
      await shot(narrow, name)
    }
    const input = narrow.getByLabel('Your message')
    await input.fill('What is a goroutine?')
    await input.press('Enter')
    await narrow.getByTestId('question').last().filter({ hasText: 'What is a goroutine?' }).waitFor()
    await narrow.getByTestId('answer').last().filter({ hasText: 'goroutine' }).waitFor()
    await noHorizontalScroll(narrow, 375)
    await shot(narrow, 'narrow-chat-answered')
  })

  await step('no errors in the browser console', null, async () => {
    check(problems.length === 0, problems.slice(0, 5).join(' | '))
  })
} catch (err) {
  exitCode = 1
  if (!(err instanceof StepError) && failed === 0) {
    failed++
    console.log(`FAIL ${String(err?.message ?? err).split('\n')[0]}`)
  }
} finally {
  await ctx?.close().catch(() => {})
  rmSync(userDataDir, { recursive: true, force: true })
}
console.log(`screenshots: ${shots}`)
console.log(`e2e: ${passed} passed, ${failed} failed`)
process.exit(exitCode || (failed > 0 ? 1 : 0))
