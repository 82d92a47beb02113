import type { ReactNode } from 'react'
import type { Problem } from '../api/problems'

/**
 * ProblemView shows a problem as a person reads it: what happened, what to
 * do, the actions that do it (Retry, Edit and run again), and the
 * technical detail folded beneath.
 */
export function ProblemView({ problem, children, id, testId = 'problem' }: { problem: Problem; children?: ReactNode; id?: string; testId?: string }) {
  return (
    <div className="problem" role="alert" id={id} data-testid={testId} data-kind={problem.kind}>
      <p className="problem-title">{problem.title}</p>
      <p className="problem-advice">{problem.advice}</p>
      {children && <div className="problem-actions">{children}</div>}
      {problem.detail && problem.detail !== problem.title && (
        <details className="problem-detail">
          <summary>Technical detail</summary>
          <p className="mono">{problem.detail}</p>
        </details>
      )}
    </div>
  )
}
