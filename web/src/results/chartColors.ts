import { useEffect, useState } from 'react'

/** The colours a chart draws with on the page's background. */
export interface ChartColors {
  initial: string
  improved: string
  /** Marks drawn in the text's colour, such as an error bar. */
  text: string
}

/**
 * chartColors are the series' colours on the page's background: in dark
 * mode lighter shades, which keep a contrast of at least 4.5:1 with the
 * dark panel (#111827) as the light ones do with white.
 */
export function chartColors(dark: boolean): ChartColors {
  return dark ? { initial: '#94a3b8', improved: '#818cf8', text: '#e5e7eb' } : { initial: '#64748b', improved: '#4f46e5', text: '#0f172a' }
}

const darkQuery = '(prefers-color-scheme: dark)'

/** useChartColors returns the series' colours for the colour scheme in use, following its changes. */
export function useChartColors(): ChartColors {
  const [dark, setDark] = useState(() => typeof window !== 'undefined' && typeof window.matchMedia === 'function' && window.matchMedia(darkQuery).matches)
  useEffect(() => {
    if (typeof window.matchMedia !== 'function') return
    const mq = window.matchMedia(darkQuery)
    const on = () => setDark(mq.matches)
    mq.addEventListener?.('change', on)
    return () => mq.removeEventListener?.('change', on)
  }, [])
  return chartColors(dark)
}
