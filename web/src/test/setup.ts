import { cleanup } from '@testing-library/react'
import { afterEach } from 'vitest'

// jsdom has no layout: charts are measured through ResizeObserver, which it
// lacks. This one reports nothing, so charts keep their initial size.
class NoResizeObserver {
  observe() {}
  unobserve() {}
  disconnect() {}
}
if (!('ResizeObserver' in globalThis)) {
  ;(globalThis as unknown as { ResizeObserver: typeof NoResizeObserver }).ResizeObserver = NoResizeObserver
}

afterEach(() => cleanup())
