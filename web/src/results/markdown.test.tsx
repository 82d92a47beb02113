import { render } from '@testing-library/react'
import { describe, expect, it } from 'vitest'
import { linkKind, Markdown, renderMarkdown } from './Markdown'

const ALLOWED = new Set(['A', 'P', 'BR', 'HR', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'STRONG', 'EM', 'B', 'I', 'DEL', 'S', 'CODE', 'PRE', 'BLOCKQUOTE', 'UL', 'OL', 'LI', 'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD'])

/** parse reads sanitized HTML into a detached tree. */
function parse(html: string): HTMLElement {
  const t = document.createElement('template')
  t.innerHTML = html
  const div = document.createElement('div')
  div.append(t.content)
  return div
}

/** expectInert checks that html holds nothing active: known elements only, no handlers or styles, safe links. */
function expectInert(html: string) {
  const root = parse(html)
  for (const el of root.querySelectorAll('*')) {
    expect(ALLOWED.has(el.tagName), `element ${el.tagName} in ${html}`).toBe(true)
    for (const a of el.attributes) {
      expect(['href', 'title', 'id', 'align', 'start', 'target', 'rel', 'tabindex'], `attribute ${a.name} in ${html}`).toContain(a.name)
    }
    // A table is reached with Tab (it may scroll sideways); nothing else is.
    if (el.hasAttribute('tabindex')) expect([el.tagName, el.getAttribute('tabindex')]).toEqual(['TABLE', '0'])
    const href = el.getAttribute('href')
    if (href !== null) expect(linkKind(href), `href ${href}`).not.toBeNull()
    if (el.getAttribute('target') !== null) {
      expect(el.getAttribute('target')).toBe('_blank')
      expect(el.getAttribute('rel')).toBe('noopener noreferrer')
    }
    const id = el.getAttribute('id')
    if (id !== null) expect(id).toMatch(/^sec-[a-z0-9-]+$/)
  }
  expect(html).not.toMatch(/<(?:script|style|iframe|svg|math|img|form|input|object|embed|meta|base)|\son\w+=|="\s*(?:javascript|vbscript|data|file):/i)
  return root
}

const HOSTILE: Record<string, string> = {
  'img onerror': '<img src=x onerror="alert(1)">',
  'inline img onerror': 'text <img src=x onerror=alert(1)> more',
  'script block': '<script>alert(1)</script>',
  'inline script': 'a <script>alert(1)</script> b',
  'iframe': '<iframe src="https://evil.example" srcdoc="<script>alert(1)</script>"></iframe>',
  'javascript link': '[click](javascript:alert(1))',
  'JavaScript link with entity': '[click](jav&#x61;script:alert(1))',
  'javascript link with tab': '<a href="java\tscript:alert(1)">x</a>',
  'javascript autolink': '<javascript:alert(1)>',
  'reference link': '[x][r]\n\n[r]: javascript:alert(1)',
  'data link': '[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)',
  'vbscript link': '<a href="vbscript:msgbox(1)">x</a>',
  'file link': '[x](file:///etc/passwd)',
  'svg onload': '<svg onload=alert(1)><circle r=1 /></svg>',
  'svg script': '<svg><script>alert(1)</script></svg>',
  'svg use': '<svg><use href="data:image/svg+xml,<svg id=x onload=alert(1)>#x"/></svg>',
  'svg animate': '<svg><a><animate attributeName=href values=javascript:alert(1) /><text y=20>x</text></a></svg>',
  'math mxss': '<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>',
  'style tag': '<style>body{display:none}</style>',
  'style attribute': '<p style="position:fixed;inset:0">cover</p>',
  'form': '<form action="https://evil.example"><input name=p type=password><button formaction="javascript:alert(1)">go</button></form>',
  'event handler': '<a href="https://example.org" onmouseover="alert(1)">x</a>',
  'details ontoggle': '<details open ontoggle=alert(1)>x</details>',
  'object': '<object data="javascript:alert(1)"></object><embed src="javascript:alert(1)">',
  'meta refresh': '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
  'base': '<base href="javascript:/">[x](/y)',
  'markdown image': '![alt text](https://tracker.example/pixel.png?leak=1)',
  'image link': '[![a](javascript:alert(1))](javascript:alert(2))',
  'relative link': '[settings](/settings)',
  'clobbering id': '<p id="location">x</p><form name="getElementById"></form>',
}

describe('renderMarkdown with hostile Markdown', () => {
  for (const [name, md] of Object.entries(HOSTILE)) {
    it(`leaves nothing active: ${name}`, () => {
      expectInert(renderMarkdown(md))
    })
  }

  it('keeps the text of what it drops', () => {
    const root = expectInert(renderMarkdown('[click](javascript:alert(1)) and ![alt text](https://tracker.example/p.png) and <b onclick=x>bold</b>'))
    expect(root.textContent).toContain('click and alt text and bold')
    expect(root.querySelector('a')?.hasAttribute('href')).toBeFalsy()
  })

  it('keeps web and mail links, opening web links in a new tab without an opener', () => {
    const root = expectInert(
      renderMarkdown('[web](https://example.org/a) [plain](http://example.org) <https://example.org/auto> [mail](mailto:ada@example.org) <a href="https://example.org/t" target="_self" rel="opener">raw</a>'),
    )
    const links = [...root.querySelectorAll('a')].map((a) => [a.textContent, a.getAttribute('href'), a.getAttribute('target'), a.getAttribute('rel')])
    expect(links).toEqual([
      ['web', 'https://example.org/a', '_blank', 'noopener noreferrer'],
      ['plain', 'http://example.org', '_blank', 'noopener noreferrer'],
      ['https://example.org/auto', 'https://example.org/auto', '_blank', 'noopener noreferrer'],
      ['mail', 'mailto:ada@example.org', null, null],
      ['raw', 'https://example.org/t', '_blank', 'noopener noreferrer'],
    ])
  })

  it("keeps a report's contents links and heading anchors", () => {
    const root = expectInert(renderMarkdown('- [1 Answer](#sec-1)\n\n<a id="sec-1"></a>\n\n## 1 Answer\n\n[away](#elsewhere)'))
    const [toc, anchor, away] = root.querySelectorAll('a')
    expect(toc.getAttribute('href')).toBe('#sec-1')
    expect(toc.hasAttribute('target')).toBe(false)
    expect(anchor.id).toBe('sec-1')
    expect(away.hasAttribute('href')).toBe(false)
  })

  it('keeps the structure of Markdown', () => {
    const root = expectInert(renderMarkdown('# T\n\n**b** *i* ~~s~~ `c`\n\n| a | b |\n|:-:|---|\n| 1 \\| 2 | 3 |\n\n3. three\n4. four\n\n- [x] done\n- [ ] open\n\n> q\n\n```\ncode <b>\n```'))
    for (const sel of ['h1', 'strong', 'em', 'del', 'code', 'table', 'th', 'td', 'ol', 'ul', 'blockquote', 'pre']) {
      expect(root.querySelector(sel), sel).not.toBeNull()
    }
    expect(root.querySelector('th')?.getAttribute('align')).toBe('center')
    expect(root.querySelector('td')?.textContent).toBe('1 | 2')
    expect(root.querySelector('ol')?.getAttribute('start')).toBe('3')
    expect(root.querySelector('ul')?.textContent).toContain('☑ done')
    expect(root.querySelector('pre')?.textContent).toBe('code <b>\n')
  })
})

describe('Markdown', () => {
  it('inserts the sanitized HTML', () => {
    const { container } = render(<Markdown source={'<img src=x onerror=alert(1)>[x](javascript:alert(2)) [ok](https://example.org)'} label="Report" />)
    const div = container.querySelector('.markdown')!
    expect(div.querySelector('img')).toBeNull()
    expect([...div.querySelectorAll('a[href]')].map((a) => a.getAttribute('href'))).toEqual(['https://example.org'])
    expect(div.querySelector('a[href]')?.getAttribute('rel')).toBe('noopener noreferrer')
  })
})

describe('linkKind', () => {
  it('knows web, mail and anchor links and refuses the rest', () => {
    expect(linkKind('https://example.org')).toBe('web')
    expect(linkKind('HTTP://example.org')).toBe('web')
    expect(linkKind('mailto:a@example.org')).toBe('mail')
    expect(linkKind('#sec-1-2')).toBe('anchor')
    for (const bad of ['javascript:alert(1)', ' JAVASCRIPT:alert(1)', 'java\nscript:alert(1)', 'data:text/html,x', 'file:///etc/passwd', 'ftp://x', '/relative', '//evil.example', '#x', '#sec-1"><script>', '']) {
      expect(linkKind(bad), bad).toBeNull()
    }
  })
})
