import { render, screen } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { describe, expect, it } from 'vitest'
import { OtherIdeas } from './SparkResults'

describe('OtherIdeas', () => {
  it('folds the ideas not carried through, with their score or what they duplicate', async () => {
    render(
      <OtherIdeas
        ideas={[
          { title: 'Roof gardens', description: 'Grow on roofs.', score: 5.25 },
          { title: 'Rooftop farms', description: 'Farms on roofs.', duplicate_of: 'Roof gardens' },
          { title: 'Seed swaps', description: 'Swap seeds.' },
        ]}
      />,
    )
    const summary = screen.getByText('3 other ideas generated')
    const details = summary.closest('details')!
    expect(details.open).toBe(false)
    await userEvent.click(summary)
    expect(details.open).toBe(true)
    expect(details.textContent).toContain('(score 5.3)')
    expect(details.textContent).toContain('(near-duplicate of “Roof gardens”)')
    expect(details.textContent).toContain('(not scored)')
  })

  it('shows nothing when every idea was carried through', () => {
    const { container } = render(<OtherIdeas ideas={[]} />)
    expect(container.textContent).toBe('')
  })
})
