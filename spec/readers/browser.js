// The browser checks of the export specs, run by spec/export_support.lua as
//
//   node spec/readers/browser.js READERS_DIR JOBS.json
//
// READERS_DIR holds node_modules/ with playwright-core and speedscope (make export-readers).
// Each job in JOBS.json (a list) is one of
//   { "kind": "speedscope", "file": F, "profiles": N, "save": true }
//       F opened in speedscope's own viewer (its importer, as its Browse button opens it); for
//       each of its first N profiles, the Sandwich view's rows (total, self, name) as shown;
//       with "save", also what speedscope's own Export (Ctrl+S) writes of what it imported,
//       summed up for each profile: { name, unit, total, frames: { NAME: { self, total } } }
//       (a frame's total counts the time it is on the stack once, however deep), which
//       covers every function where the Sandwich view shows a screenful
//   { "kind": "svg", "file": F, "click": NAME, "search": TERM, "hover": NAME,
//     "queries": [TERM...], "top": true }
//       F opened in Chromium: where the window is as it opens (its scroll position, the root
//       frame's, the title bar's and the details line's place in it); the frames before and
//       after a click on the frame named NAME, after a search for TERM (answering the page's
//       prompt, whose text is kept as the help), and the details line shown while the mouse
//       is over the frame named NAME; for each of the queries, F opened with ?s=TERM: the
//       labels of the frames painted and the line the page prints; with top, where the
//       window is once scrolled to the top
//   { "kind": "html", "file": F, "query": "?s=TERM", "viewport": [W, H], "steps": [STEP...] }
//       F (cprof's HTML report) opened in Chromium: the page's errors, console errors and dialogs, the
//       requests it made (none but F itself is allowed), when its script had drawn it and when
//       the browser had painted that (ms since the navigation started), the CPU time its main
//       thread took to get there (ms), and the STEPs' readings, in order:
//         { "click": SEL [, "text": T] }   click the (first) element matching SEL (whose text is T)
//         { "hover": SEL [, "text": T] }   the mouse over it
//         { "select": SEL, "value": V }    choose the option V of the <select>
//         { "fill": SEL, "value": V }      type V into the field and press Enter
//         { "read": NAME, "texts": SEL }   the text of each element matching SEL
//         { "read": NAME, "attr": A, "of": SEL }   attribute A of each element matching SEL
//         { "read": NAME, "boxes": true }  the flame graph's boxes: label, text, fill, place
//         { "read": NAME, "scroll": SEL }  scrollTop, scrollHeight and clientHeight of SEL
//         { "shot": PATH [, "of": SEL] }   a PNG screenshot of the window (or of SEL)
// and prints one JSON document: a list of results, one per job.  Chromium runs headless,
// without a sandbox (we are root), with a fresh profile directory, and without any network.
'use strict';
const fs = require('fs'), path = require('path'), os = require('os');
const readers = path.resolve(process.argv[2]), jobs = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const { chromium } = require(path.join(readers, 'node_modules', 'playwright-core'));
const speedscope = path.join(readers, 'node_modules', 'speedscope', 'dist', 'release', 'index.html');

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--allow-file-access-from-files'];

// The rows of speedscope's Sandwich table, as text.
async function sandwich(page) {
  const text = await page.evaluate(() => document.body.innerText);
  const at = text.indexOf('Total\tSelf\tSymbol Name');
  if (at < 0) return { text: text.slice(0, 2000), rows: [] };
  const lines = text.slice(at).split('\n').slice(1).map(s => s.replace(/^\t/, ''));
  const rows = [];
  for (let i = 0; i + 2 < lines.length + 1 && lines[i] !== undefined; i += 3) {
    if (!/\(/.test(lines[i])) break;
    rows.push({ total: lines[i], self: lines[i + 1], name: lines[i + 2] });
  }
  const title = text.slice(0, at).split('\n').filter(s => /\(\d+\/\d+\)$/.test(s))[0] || '';
  return { title, rows };
}

// Self and total time of each frame name in each profile of speedscope's export (evented
// profiles: open and close events of frame indices at values).
function summary(doc) {
  const names = doc.shared.frames.map(f => f.name);
  return doc.profiles.map(p => {
    const frames = {}, stack = [], depth = new Map(), since = new Map();
    const row = name => frames[name] || (frames[name] = { self: 0, total: 0 });
    let last = p.startValue;
    for (const e of p.events) {
      if (stack.length > 0) row(names[stack[stack.length - 1]]).self += e.at - last;
      last = e.at;
      const n = depth.get(e.frame) || 0;
      if (e.type === 'O') {
        stack.push(e.frame);
        if (n === 0) since.set(e.frame, e.at);
        depth.set(e.frame, n + 1);
      } else {
        stack.pop();
        depth.set(e.frame, n - 1);
        if (n === 1) row(names[e.frame]).total += e.at - since.get(e.frame);
      }
    }
    return { name: p.name, unit: p.unit, total: p.endValue - p.startValue, frames };
  });
}

async function speedscopeJob(browser, job) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1200 } });
  // speedscope's Export hands its file to URL.createObjectURL: keep it
  await page.addInitScript(() => {
    const make = URL.createObjectURL;
    URL.createObjectURL = blob => { window.cprofSaved = blob; return make.call(URL, blob); };
  });
  const log = [];
  // speedscope logs "import: N ms" once it has imported the file (a canvas is there before)
  let imported;
  const importDone = new Promise(resolve => { imported = resolve; });
  page.on('console', m => {
    log.push(m.text());
    if (/^import: /.test(m.text())) imported();
  });
  page.on('dialog', d => { log.push('dialog: ' + d.message()); d.dismiss(); });
  // 20 s, and 1 s more per MB: a trace of a million events is 80 MB
  const timeout = 20000 + Math.ceil(fs.statSync(job.file).size / 1000);
  // the file given to the input of speedscope's Browse button
  await page.goto('file://' + speedscope, { timeout });
  await page.setInputFiles('#file', job.file, { timeout });
  // its error page, or the end of the wait, settles this one (never left to reject unhandled)
  const failed = page.waitForFunction(() => /Something went wrong/.test(document.body.innerText),
    null, { timeout }).then(() => null, e => e);
  const error = await Promise.race([importDone, failed]);
  if (error) throw error;
  await page.waitForTimeout(300);
  await page.keyboard.press('3');            // the Sandwich view
  const profiles = [];
  for (let i = 0; i < (job.profiles || 1); i++) {
    if (i > 0) await page.keyboard.press('n');  // the next profile
    await page.waitForTimeout(300);
    profiles.push(await sandwich(page));
  }
  let saved;
  if (job.save) {
    await page.keyboard.press('Control+s');
    await page.waitForFunction(() => window.cprofSaved !== undefined, null, { timeout });
    saved = summary(JSON.parse(await page.evaluate(() => window.cprofSaved.text())));
  }
  await page.close();
  return { profiles, saved, log: log.filter(s => !/WebGL|GL Driver|^Saving /.test(s)) };
}

// The visible frames: name, x, width, fill.
function frames(page) {
  return page.evaluate(() => Array.prototype.map.call(document.querySelectorAll('#frames > g'), g => {
    const r = g.querySelector('rect');
    return { name: g.getAttribute('data-n'), label: g.getAttribute('data-l'),
      shown: g.style.display !== 'none', x: +r.getAttribute('x'), width: +r.getAttribute('width'),
      fill: r.getAttribute('fill'), text: g.querySelector('text').textContent,
      parent: g.classList.contains('parent') };
  }));
}

// Where the window is: its scroll position and height, the page's height, and the top and
// bottom (in the window) of the root frame, the title bar and the details line.
function view(page) {
  return page.evaluate(() => {
    const place = e => { const b = e.getBoundingClientRect(); return { top: b.top, bottom: b.bottom }; };
    return { scrollY: window.scrollY, innerHeight: window.innerHeight,
      height: +document.documentElement.getAttribute('height'),
      root: place(document.querySelector('#frames > g[data-d="1"] rect')),
      bar: place(document.getElementById('bar')), foot: place(document.getElementById('foot')) };
  });
}

async function open(page, file) {
  await page.goto(file);
  await page.waitForFunction(() => typeof zoomed !== 'undefined' && frames && frames.length > 0);
}

async function svgJob(browser, job) {
  const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
  const errors = [];
  let help = null;
  page.on('pageerror', e => errors.push(String(e)));
  page.on('dialog', d => { help = d.message(); d.accept(job.search); });
  const url = 'file://' + path.resolve(job.file);
  await open(page, url);
  const out = { errors, title: await page.textContent('#title') };
  out.view = await view(page);
  out.before = await frames(page);
  if (job.hover) {
    await page.hover('#frames > g[data-n="' + job.hover + '"]');
    out.details = await page.textContent('#details');
  }
  if (job.click) {
    await page.click('#frames > g[data-n="' + job.click + '"]');
    out.zoomed = await frames(page);
    out.unzoom = await page.evaluate(() => !document.getElementById('unzoom').classList.contains('hide'));
    await page.click('#unzoom');
    out.reset = await frames(page);
  }
  if (job.search) {
    await page.click('#search');
    await page.waitForFunction(() => document.getElementById('matched').textContent.trim() !== '');
    out.matched = await page.textContent('#matched');
    out.share = await page.getAttribute('#matched', 'data-share');
    out.searched = await frames(page);
    out.help = help;
  }
  if (job.top) {
    // the scroll event comes before the next frame is drawn
    await page.evaluate(() => new Promise(done => {
      window.scrollTo(0, 0); requestAnimationFrame(() => requestAnimationFrame(done));
    }));
    out.top = await view(page);
  }
  out.queries = [];
  for (const term of job.queries || []) {
    await open(page, url + '?s=' + encodeURIComponent(term));
    const painted = (await frames(page)).filter(f => f.fill === 'rgb(230,0,230)').map(f => f.label);
    out.queries.push({ term, painted, matched: await page.textContent('#matched') });
  }
  await page.close();
  return out;
}

async function htmlStep(page, step, reads) {
  const at = sel => step.text === undefined ? page.locator(sel).first()
    : page.locator(sel).filter({ hasText: step.text }).first();
  if (step.click !== undefined) {
    await at(step.click).click();
  } else if (step.hover !== undefined) {
    await at(step.hover).hover();
  } else if (step.select !== undefined) {
    await page.selectOption(step.select, step.value);
  } else if (step.fill !== undefined) {
    await page.fill(step.fill, step.value);
    await page.press(step.fill, 'Enter');
  } else if (step.texts !== undefined) {
    reads[step.read] = await page.$$eval(step.texts, es => es.map(e => e.textContent));
  } else if (step.attr !== undefined) {
    reads[step.read] = await page.$$eval(step.of, (es, a) => es.map(e => e.getAttribute(a)), step.attr);
  } else if (step.boxes) {
    reads[step.read] = await page.$$eval('#boxes > .b', es => es.map(e => ({ label: e._b.label || null,
      text: e.textContent, fill: e.style.background, left: e.offsetLeft, width: e.offsetWidth,
      top: e.offsetTop, anc: e.classList.contains('anc'), sel: e.classList.contains('sel') })));
  } else if (step.scroll !== undefined) {
    reads[step.read] = await page.$eval(step.scroll, e => ({ top: e.scrollTop, height: e.scrollHeight,
      client: e.clientHeight }));
  } else if (step.shot !== undefined) {
    if (step.of) await page.locator(step.of).screenshot({ path: step.shot });
    else await page.screenshot({ path: step.shot });
  } else {
    throw new Error('unknown step ' + JSON.stringify(step));
  }
}

async function htmlJob(browser, job) {
  const size = job.viewport || [1300, 900];
  const page = await browser.newPage({ viewport: { width: size[0], height: size[1] } });
  const url = 'file://' + path.resolve(job.file);
  const errors = [], requests = [], reads = {};
  page.on('pageerror', e => errors.push(String(e)));
  page.on('console', m => { if (m.type() === 'error' || m.type() === 'warning') errors.push(m.type() + ': ' + m.text()); });
  page.on('request', r => { if (r.url().split('?')[0] !== url) requests.push(r.url()); });
  page.on('dialog', d => { errors.push('dialog: ' + d.message()); d.dismiss(); });
  // when the page marks itself drawn, the frame after the next one: the first painted after it
  await page.addInitScript(() => {
    new MutationObserver((_, seen) => {
      seen.disconnect();
      requestAnimationFrame(() => requestAnimationFrame(() => { window.cprofPainted = performance.now(); }));
    }).observe(document, { attributes: true, subtree: true, attributeFilter: ['data-ready'] });
  });
  // the CPU time of the page's main thread, which a busy machine does not lengthen as it does
  // the wall-clock times
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const cpu = async () => (await cdp.send('Performance.getMetrics')).metrics.find(m => m.name === 'ThreadTime').value;
  const cpu0 = await cpu();
  // the page is drawn, or its script failed
  const failed = new Promise(done => page.once('pageerror', done));
  await page.goto(url + (job.query || ''));
  await Promise.race([failed, page.waitForFunction(() => document.documentElement.dataset.ready !== undefined,
    null, { timeout: 60000 })]);
  const ready = await page.evaluate(() => document.documentElement.dataset.ready);
  if (ready === undefined) {
    await page.close();
    return { errors, requests, error: 'the page was not drawn' };
  }
  const painted = await (await page.waitForFunction(() => window.cprofPainted)).jsonValue();
  const thread = Math.round(1000 * (await cpu() - cpu0));
  for (const step of job.steps || []) await htmlStep(page, step, reads);
  await page.close();
  return { errors, requests, ready: +ready, painted, thread, reads };
}

(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CPROF_CHROMIUM || '/usr/bin/chromium',
    args: FLAGS, env: { ...process.env, HOME: os.tmpdir() } });
  const results = [];
  for (const job of jobs) {
    try {
      const run = { svg: svgJob, html: htmlJob }[job.kind] || speedscopeJob;
      results.push(await run(browser, job));
    } catch (e) {
      results.push({ error: String(e && e.stack || e) });
    }
  }
  await browser.close();
  process.stdout.write(JSON.stringify(results));
})().catch(e => { process.stderr.write(String(e && e.stack || e) + '\n'); process.exit(1); });
